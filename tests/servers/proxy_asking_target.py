"""A handshake-era server behind the proxy that asks its client outside a tool call, and late.

``python proxy_asking_target.py [--http]`` serves on stdio, or over HTTP on a free port of
127.0.0.1 (its URL printed on stdout as ``URL <url>``), the handshake era only (a 2026-07-28
request is "method not found", as a server of 2025 answers it).  What it does, each as many
servers do:

* ``completion/complete`` for the prompt ``greet`` logs the value it completes, asks the client's
  roots when the value starts with ``roots`` (completing paths under them: its one value is what
  the question got, the roots or an error), waits until it is cancelled when the value is
  ``wait`` (then says ``completion cancelled`` on stderr), goes on after its cancellation when
  the value starts with ``ignore`` (receivers "MAY ignore" it, basic/utilities/cancellation: it
  says ``ignoring the cancellation`` on stderr, and holds the next ``tools/list`` until it has
  logged ``still completing <value>`` while that listing is in flight; its answer, its session
  drops), and lets ``hold`` return;
* ``hold`` reports progress once, then waits until a completion has run;
* ``late`` reports progress once, waits until it is cancelled, then asks the user a question
  anyway (not every tool stops at once; over HTTP on its GET stream, as the question names no
  request), and writes what it got on stderr (``late <outcome>``); ``seen_late`` waits until that
  question has its answer or error, then asks its own client a question, and returns both;
  ``ask`` asks its client a question, and returns the answer; ``impatient`` asks one, gives up on
  it after a given time (the client is told it is cancelled), and says so;
* ``sample_with_tools`` asks the client's model with a tool, and ``visit_anyway`` sends the user
  to a page (URL-mode elicitation), whatever the client declared;
* told the client's roots changed, it asks for them and shows what it got as the description of
  a tool ``roots_seen`` (the client is told the tools changed).
"""

from __future__ import annotations

import sys
import threading

from mcp_ref import Context, Server
from mcp_ref.errors import MethodNotFound
from mcp_ref.extension import Extension
from mcp_ref.lifecycle import is_modern

#: Seconds the target waits for anything (its tests' every wait is shorter).
WAIT = 30.0

completed = threading.Event()
late_outcome: list[str] = []
late_answered = threading.Event()
#: Set while a completion of ``ignore...`` is at work; ``listed`` once a listing came meanwhile,
#: ``logged`` once that completion logged with the listing in flight.
ignoring = threading.Event()
listed = threading.Event()
logged = threading.Event()


def outcome_of(ask) -> str:
    """What a question of ours got: its answer, or the error the client sent."""
    try:
        return f"answer: {ask()}"
    except Exception as exc:
        return f"error: {exc}"


class Asking(Extension):
    """The handshake era only; a completion that logs and asks for the roots."""

    name = "test/asking"

    def intercept_request(self, call, proceed):
        if is_modern(call.params) or call.method == "server/discover":
            raise MethodNotFound(f"Method not found: {call.method}")
        if call.method == "tools/list" and ignoring.is_set():
            listed.set()
            logged.wait(WAIT)
        if call.method != "completion/complete":
            return proceed()
        value = call.params["argument"]["value"]
        call.caller.log("info", f"completing {value}")
        if value.startswith("ignore"):  # on after its cancellation, while a listing is in flight
            ignoring.set()
            if call.context.cancelled.wait(WAIT):
                print("ignoring the cancellation", file=sys.stderr, flush=True)
            listed.wait(WAIT)
            call.caller.log("info", f"still completing {value}")
            print("logged still completing", file=sys.stderr, flush=True)
            ignoring.clear()
            logged.set()
        if value == "wait":  # until cancelled (at most WAIT): said on stderr
            cancelled = call.context.cancelled.wait(WAIT)
            print(f"completion {'cancelled' if cancelled else 'done'}", file=sys.stderr, flush=True)
        values = []
        if value.startswith("roots"):
            got = outcome_of(lambda: call.caller.request("roots/list", None, timeout=WAIT))
            values.append(got[:100])
        completed.set()
        return {"completion": {"values": values, "hasMore": False}}


server = Server("asking", "1.0", extensions=[Asking()])


@server.tool()
def hold(ctx: Context) -> str:
    """Wait until a completion has run."""
    ctx.report_progress(1, None, "holding")
    return "held" if completed.wait(WAIT) else "not released"


@server.tool()
def late(ctx: Context) -> str:
    """Wait until cancelled, then ask the user all the same."""
    ctx.report_progress(1, None, "waiting to be cancelled")
    ctx.request.cancelled.wait(WAIT)
    question = {
        "message": "A question of the cancelled call",
        "requestedSchema": {"type": "object", "properties": {"card": {"type": "string"}}},
    }
    late_outcome.append(
        outcome_of(lambda: ctx.connection.request("elicitation/create", question, timeout=WAIT))
    )
    print(f"late {late_outcome[0]}", file=sys.stderr, flush=True)
    late_answered.set()
    return "asked"


@server.tool()
def seen_late(ctx: Context) -> str:
    """What the cancelled call's question got; then a question of this call's own."""
    if not late_answered.wait(WAIT):
        return "the late question was never asked"
    return f"late {late_outcome[0]} | {ask(ctx)}"


@server.tool()
def ask(ctx: Context) -> str:
    """Ask the client a question of this call's own."""
    mine = ctx.elicit(
        "A question of this call", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    return f"mine: {mine.action} {mine.content}"


@server.tool()
def impatient(seconds: float, ctx: Context) -> str:
    """Ask the client a question, giving up on it after ``seconds`` (the client is told it is
    cancelled), and say what came of it."""
    try:
        answer = ctx.elicit(
            "Quick?",
            {"type": "object", "properties": {"name": {"type": "string"}}},
            timeout=seconds,
        )
    except Exception as exc:
        return f"gave up: {type(exc).__name__}"
    return f"answered: {answer.action}"


@server.tool()
def sample_with_tools(ctx: Context) -> str:
    """Ask the client's model, offering it a tool (sent as it is, whatever the client declared)."""
    question = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Weather?"}}],
        "maxTokens": 20,
        "tools": [{"name": "weather", "inputSchema": {"type": "object"}}],
    }
    return outcome_of(
        lambda: ctx.connection.request("sampling/createMessage", question, timeout=WAIT)
    )


@server.tool()
def visit_anyway(ctx: Context) -> str:
    """Send the user to a page (URL-mode elicitation), whatever modes the client declared."""
    question = {
        "mode": "url",
        "message": "Sign in",
        "url": "https://example.com/sign-in",
        "elicitationId": "e-1",
    }
    return outcome_of(lambda: ctx.connection.request("elicitation/create", question, timeout=WAIT))


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


@server.completion(prompt="greet")
def complete_name(argument: str, value: str, context_arguments: dict) -> list[str]:
    return []  # (answered by Asking, which declares the capability through this)


def roots_changed(connection) -> None:
    def ask() -> None:
        got = outcome_of(lambda: connection.request("roots/list", None, timeout=WAIT))
        server.add_tool(lambda: got, name="roots_seen", description=got[:200])

    threading.Thread(target=ask, daemon=True).start()


server.on_roots_list_changed = roots_changed

if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        server.run_http(
            "127.0.0.1", 0, on_ready=lambda httpd: print(f"URL {httpd.url}/mcp", flush=True)
        )
    else:
        server.run_stdio()
