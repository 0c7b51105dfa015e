"""Test server for tests/protocol/test_session.py (mcp_ref's own Server on stdio).

* ``gated(n)`` returns ``n`` only once the gate is open; the client opens it
  by sending ``notifications/roots/list_changed`` (``Client.set_roots``), so a
  test can hold hundreds of calls in flight at once.
* ``block(key)`` waits until the client cancels it (or ``seconds`` pass) and
  records what its handler saw under ``key``; ``recorded(key)`` waits for
  that record and returns it.
* ``ping_client`` and ``sample_briefly`` call back into the client.
* ``keeps_going(key)`` goes on after it is cancelled, and records whether it could still send
  progress or ask the client anything.
"""

import logging
import sys
import threading

from mcp_ref import Context, RequestCancelled, RequestTimeout, Server, ToolError

logging.basicConfig(
    level=logging.WARNING, stream=sys.stderr, format="session-server: %(levelname)s: %(message)s"
)

server = Server("session-test", version="1.0")
gate = threading.Event()
server.on_roots_list_changed = lambda connection: gate.set()
records: dict[str, str] = {}
records_changed = threading.Condition()


@server.tool()
def gated(n: int) -> int:
    """Return n once the gate is open."""
    if not gate.wait(30):
        raise ToolError("the gate never opened")
    return n


@server.tool()
def block(key: str, ctx: Context, seconds: float = 30.0) -> str:
    """Wait for cancellation; record whether the handler saw it.  It reports progress 0 once it
    runs (a request cancelled while it still waits for a thread never runs at all)."""
    ctx.report_progress(0, message="waiting")
    ctx.request.cancelled.wait(seconds)
    with records_changed:
        records[key] = "cancelled" if ctx.is_cancelled else "not cancelled"
        records_changed.notify_all()
    ctx.check_cancelled()
    return "finished"


@server.tool()
def answers_all_the_same(ctx: Context) -> str:
    """Report progress 0 once it runs, wait for its cancellation (30 s at most), then answer
    all the same."""
    ctx.report_progress(0, message="waiting")
    ctx.request.cancelled.wait(30)
    return "finished all the same"


@server.tool()
def keeps_going(key: str, ctx: Context) -> str:
    """Ignore cancellation: report progress and log before and after it, then (handshake era) try
    to ask the client; record whether the progress was sent and whether the ask was refused."""
    ctx.info("before the cancel")
    ctx.report_progress(1, message="before")  # (the client cancels when it sees this)
    ctx.request.cancelled.wait(30)
    sent = ctx.report_progress(2, message="after")
    ctx.info("after the cancel")
    asked = "not asked"
    if ctx.request.envelope is None:
        try:
            ctx.sample("still there?", max_tokens=5)
            asked = "asked"
        except RequestCancelled:
            asked = "refused"
    with records_changed:
        records[key] = f"progress sent: {sent}, {asked}"
        records_changed.notify_all()
    return "finished"


@server.tool()
def recorded(key: str, seconds: float = 10.0) -> str:
    """What block(key) recorded (waits up to `seconds` for it)."""
    with records_changed:
        records_changed.wait_for(lambda: key in records, seconds)
        return records.get(key, "nothing recorded")


@server.tool()
def ping_client(ctx: Context) -> str:
    """Ping the client and report its answer."""
    result = ctx.connection.session.request("ping", timeout=10)
    return f"pong {result}"


@server.tool()
def sample_briefly(ctx: Context, timeout: float) -> str:
    """Ask the client for sampling, giving up after `timeout` seconds."""
    try:
        reply = ctx.sample("hello?", max_tokens=5, timeout=timeout)
    except RequestTimeout:
        return "timed out"
    return f"answered by {reply.model}"


if __name__ == "__main__":
    server.run_stdio()
