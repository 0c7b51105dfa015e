"""An mcp_ref server for tests of behaviour spec_notes listed as untested.

``untested_server.py``            the tools below
``untested_server.py templates``  page_size=2 and five resource templates (t1..t5), nothing else
``untested_server.py slow-init``  the tools below, but the initialize result is held until the
                                  client sends ``notifications/roots/list_changed`` (at most 10 s),
                                  so a test can send something while initialize is in flight

Tools:

* ``gated(n)`` returns ``n`` once the client has sent ``notifications/roots/list_changed``.
* ``progress_forever(key)`` reports progress every 0.05 s until cancelled (at most 30 s) and
  records under ``key`` whether it saw the cancellation; ``recorded(key)`` returns that record.
* ``ping_client`` and ``roots`` call back through ``ServerConnection.request`` / ``Context.list_roots``
  (so they get the "initialized yet?" check); a CapabilityError is returned as text.
* ``raw_request(method, params)`` sends any request to the client through the session, bypassing
  every capability check, and returns ``{"result": ...}`` or ``{"error": code}`` as JSON.
* ``audio``, ``link``, ``fail_custom`` (raises McpError -32001), ``iconic`` (has icons).
* ``sample_with_tools``, ``sample_with_progress``, ``elicit_url``, ``elicit_form``,
  ``elicit_optional`` (a form with no required field), ``bad_progress``.
* ``log_after_answer(key)`` answers at once and leaves a thread that logs and reports progress for
  the ended request once ``release_late_log(key)`` is called; that call returns what was sent.
* ``log_as_the_call_ends`` answers while a thread's log message for the call is being written:
  the message's data is held in serialisation until the call's end asks for the request's
  ``send_lock`` (at most 5 s).
* ``env(name)`` and ``cwd()`` describe the server process.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sys
import threading
from pathlib import Path

# This checkout's mcp_ref, whatever copy an editable install elsewhere may point at.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import CapabilityError, Context, InvalidParams, McpError, Server
from mcp_ref.types import AudioContent, ResourceLink

ICONS = [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}]
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
AUDIO_DATA = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


class SignallingLock:
    """A request's ``send_lock`` that tells (``contended``) when a thread asks for it while
    another holds it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.contended = threading.Event()

    def __enter__(self) -> None:
        if self.lock.locked():
            self.contended.set()
        self.lock.acquire()

    def __exit__(self, *exc_info) -> None:
        self.lock.release()


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def full(slow_init: bool = False) -> Server:
    gate = threading.Event()

    class SlowInitServer(Server):
        def server_info(self, version=None):
            gate.wait(10)  # released by notifications/roots/list_changed
            return super().server_info(version)

    server = (SlowInitServer if slow_init else Server)("untested", version="1.0")
    server.on_roots_list_changed = lambda connection: gate.set()
    records: dict[str, str] = {}
    records_changed = threading.Condition()

    @server.tool()
    def gated(n: int) -> str:
        """Return n once the gate is open (at most 30 s)."""
        return str(n) if gate.wait(30) else "the gate never opened"

    @server.tool()
    def progress_forever(key: str, ctx: Context) -> str:
        """Report progress every 0.05 s until cancelled (at most 30 s)."""
        step = 0
        while not ctx.request.cancelled.wait(0.05) and step < 600:
            step += 1
            ctx.report_progress(step)
        with records_changed:
            records[key] = "cancelled" if ctx.is_cancelled else "not cancelled"
            records_changed.notify_all()
        ctx.check_cancelled()
        return f"stopped after {step} steps"

    @server.tool()
    def recorded(key: str, seconds: float = 5.0) -> str:
        """What progress_forever(key) recorded (waits up to `seconds` for it)."""
        with records_changed:
            records_changed.wait_for(lambda: key in records, seconds)
            return records.get(key, "nothing recorded")

    @server.tool()
    def ping_client(ctx: Context) -> str:
        """Ping the client through ServerConnection.request."""
        try:
            return f"pong {json.dumps(ctx.connection.request('ping', None, timeout=5))}"
        except CapabilityError as exc:
            return _error_text(exc)

    @server.tool()
    def roots(ctx: Context) -> str:
        """The client's roots (Context.list_roots)."""
        try:
            return json.dumps([r.uri for r in ctx.list_roots(timeout=5)])
        except CapabilityError as exc:
            return _error_text(exc)

    @server.tool()
    def raw_request(method: str, ctx: Context, params: dict | None = None) -> str:
        """Send any request to the client, with no capability checks; report the answer."""
        try:
            return json.dumps({"result": ctx.connection.session.request(method, params, timeout=5)})
        except McpError as exc:
            return json.dumps({"error": exc.code, "message": exc.message})

    @server.tool()
    def audio() -> AudioContent:
        """An audio block."""
        return AudioContent(data=AUDIO_DATA, mime_type="audio/wav")

    @server.tool()
    def link() -> ResourceLink:
        """A resource link."""
        return ResourceLink(uri="file:///srv/notes.txt", name="notes", mime_type="text/plain")

    @server.tool()
    def fail_custom() -> str:
        """Fail with a JSON-RPC error of the server's own choosing."""
        raise McpError("custom failure", code=-32001, data={"why": "testing"})

    @server.tool(icons=ICONS)
    def iconic() -> str:
        """A tool with icons."""
        return "iconic"

    @server.tool()
    def sample_with_tools(ctx: Context) -> str:
        """Sampling with tools (needs the client's sampling.tools)."""
        try:
            reply = ctx.sample(
                "Weather in Oslo?",
                max_tokens=50,
                tools=[WEATHER_TOOL],
                tool_choice={"mode": "auto"},
            )
        except CapabilityError as exc:
            return _error_text(exc)
        return f"{reply.model}: {reply.content.text}"

    @server.tool()
    def sample_with_progress(ctx: Context) -> str:
        """Sampling whose request carries a progress token; returns the progress the client reported."""
        progress: list = []
        params = {
            "messages": [{"role": "user", "content": {"type": "text", "text": "slowly"}}],
            "maxTokens": 5,
        }
        pending = ctx.connection.session.send_request(
            "sampling/createMessage",
            params,
            timeout=5,
            on_progress=lambda value, total, message: progress.append([value, total, message]),
        )
        reply = pending.result()
        return json.dumps({"model": reply["model"], "progress": progress})

    @server.tool()
    def elicit_url(url: str, elicitation_id: str, ctx: Context) -> str:
        """URL-mode elicitation; on accept, tell the client the elicitation completed."""
        try:
            answer = ctx.elicit_url("Please sign in", url, elicitation_id)
        except CapabilityError as exc:
            return _error_text(exc)
        if answer.action == "accept":
            ctx.complete_url_elicitation(elicitation_id)
        return answer.action

    @server.tool()
    def elicit_form(ctx: Context) -> str:
        """Form-mode elicitation of a name; errors are returned as text."""
        try:
            answer = ctx.elicit("Your name?", NAME_SCHEMA)
        except (CapabilityError, InvalidParams) as exc:
            return _error_text(exc)
        return json.dumps({"action": answer.action, "content": answer.content})

    @server.tool()
    def elicit_optional(ctx: Context) -> str:
        """Form-mode elicitation of an optional note (no field required); errors as text."""
        try:
            answer = ctx.elicit(
                "A note?", {"type": "object", "properties": {"note": {"type": "string"}}}
            )
        except (CapabilityError, InvalidParams) as exc:
            return _error_text(exc)
        return json.dumps({"action": answer.action, "content": answer.content})

    late: dict[str, tuple[threading.Event, queue.Queue]] = {}

    @server.tool()
    def log_after_answer(key: str, ctx: Context) -> str:
        """Answer at once; a thread left behind logs and reports progress for this request once
        ``release_late_log(key)`` is called (after the answer), and tells that call what was sent."""
        go, sent = late[key] = (threading.Event(), queue.Queue())

        def left_behind() -> None:
            go.wait(30)
            logged = ctx.info("after the answer")
            sent.put({"logged": logged, "progress": ctx.report_progress(5, 10)})

        threading.Thread(target=left_behind, daemon=True).start()
        return "answered"

    @server.tool()
    def release_late_log(key: str) -> str:
        """Let ``log_after_answer(key)``'s thread go; what it sent, as JSON (at most 30 s)."""
        go, sent = late.pop(key)
        go.set()
        return json.dumps(sent.get(timeout=30))

    @server.tool()
    def log_as_the_call_ends(ctx: Context) -> str:
        """Answer while a thread logs for this call: its message, past the check that the call
        has not ended, is held in serialisation until the call's end asks for ``send_lock``."""
        lock = SignallingLock()
        ctx.request.send_lock = lock  # type: ignore[assignment]
        serialising = threading.Event()

        class HeldData(dict):
            def items(self):  # the JSON encoder asks a dict subclass for its items
                serialising.set()
                lock.contended.wait(5)
                return super().items()

        threading.Thread(target=ctx.info, args=(HeldData(n="logged"),), daemon=True).start()
        if not serialising.wait(30):
            raise RuntimeError("the log message was not written")
        return "answered"

    @server.tool()
    def bad_progress(ctx: Context) -> str:
        """Report progress 1, then 1 again and 0.5 (both must be refused), then 2."""
        outcomes = [ctx.report_progress(1, 2)]
        for value in (1, 0.5):
            try:
                outcomes.append(ctx.report_progress(value, 2))
            except ValueError as exc:
                outcomes.append(_error_text(exc))
        outcomes.append(ctx.report_progress(2, 2))
        return json.dumps(outcomes)

    @server.tool()
    def env(name: str) -> str:
        """An environment variable of the server process ("<unset>" if absent)."""
        return os.environ.get(name, "<unset>")

    @server.tool()
    def cwd() -> str:
        """The server process's working directory."""
        return os.getcwd()

    return server


def templates() -> Server:
    server = Server("untested-templates", page_size=2)

    def make(i: int):
        def read(x: str) -> str:
            return f"template {i}: {x}"

        return read

    for i in range(1, 6):
        server.add_resource(make(i), f"untested://t{i}/{{x}}", name=f"t{i}")
    return server


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="untested-server: %(levelname)s: %(message)s",
    )
    mode = sys.argv[1] if len(sys.argv) > 1 else "full"
    {"full": full, "slow-init": lambda: full(slow_init=True), "templates": templates}[
        mode
    ]().run_stdio()
