"""A server for the tasks extension tests (tests/extensions/test_tasks.py): tools that become tasks.

python tests/servers/tasks_server.py        # over stdio
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Elicit, McpError, ResourceNotFound, Server, ToolError
from mcp_ref.cancellation import Cancellation

CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def build() -> Server:
    server = Server("tasks", version="1.0")
    gate = Cancellation()  # an Event that calls back when set

    @server.tool()
    def plain(text: str) -> str:
        """Never a task."""
        return text

    @server.tool(task="optional")
    def compute(ctx: Context, n: int = 2) -> str:
        """A task for a client that takes tasks; waits until `release` is called (or it is cancelled)."""
        ctx.start_task()
        ctx.report_progress(1, 2, "half way")
        woken = threading.Event()  # by `release`, or by the cancellation
        gate.add_callback(woken.set)
        ctx.request.cancelled.add_callback(woken.set)
        woken.wait(600)
        gate.remove_callback(woken.set)
        ctx.request.cancelled.remove_callback(woken.set)
        ctx.check_cancelled()
        return f"{n} squared is {n * n}"

    @server.tool()
    def release() -> str:
        """Let every waiting `compute` finish."""
        gate.set()
        return "released"

    @server.tool(task="required")
    def forever(ctx: Context) -> str:
        """A task that runs until it is cancelled."""
        ctx.start_task()
        ctx.sleep(3600)
        return "never"

    @server.tool(task="required")
    def tool_error(ctx: Context) -> str:
        """A task that completes with isError."""
        ctx.start_task()
        raise ToolError("no luck")

    @server.tool(task="required")
    def protocol_error(ctx: Context) -> str:
        """A task that fails with a JSON-RPC error."""
        ctx.start_task()
        raise McpError("the backend refused", code=-32603)

    @server.tool(task="required")
    def odd_error(ctx: Context, kind: str) -> str:
        """A task that fails with an McpError made oddly: an exception as its message, or data no
        JSON can carry."""
        ctx.start_task()
        if kind == "message":
            raise McpError(ValueError("not valid"))  # type: ignore[arg-type]
        raise McpError("refused", data={"when": object()})

    @server.tool(task="optional")
    def missing_resource(ctx: Context, relayed: bool = False) -> str:
        """Fails, as a task for a client that takes tasks, with "resource not found": raised as
        ResourceNotFound, or (``relayed``) as the bare -32002 an older server answered."""
        ctx.start_task()
        message, data = "Resource not found: notes://missing", {"uri": "notes://missing"}
        if relayed:
            raise McpError(message, code=-32002, data=data)
        raise ResourceNotFound(message, data=data)

    @server.tool(task="required")
    def confirm(filename: str, ctx: Context) -> str:
        """A task that asks for confirmation, then for a name, in two steps."""
        ctx.start_task()
        answer = ctx.elicit(f"Delete {filename}?", CONFIRM, key="confirm")
        if not (answer.action == "accept" and answer.content["confirm"]):
            return f"kept {filename}"
        first, second = ctx.gather(
            Elicit("Your name?", NAME, key="name"), Elicit("Sure?", CONFIRM, key="confirm")
        )
        return f"{first.content['name']} deleted {filename} ({second.content['confirm']})"

    @server.tool(task="optional")
    def ask_then_task(ctx: Context) -> str:
        """Asks the name before the task begins (an input_required round), then works as a task."""
        answer = ctx.elicit("What is your name?", NAME, key="user_name")
        ctx.start_task()
        return f"Hello, {answer.content['name']}!"

    return server


if __name__ == "__main__":
    build().run_stdio()
