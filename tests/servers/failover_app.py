"""The app of tests/state/test_failover.py, run by gunicorn as deployments of one worker each sharing the
Redis that ``MCP_REF_STATE`` names: handshake-era sessions served by every worker, and a worker
killed under them.  Every answer says which process gave it.
"""

import os

from mcp_ref import Context, Server

server = Server("failover")


@server.resource("memo://note")
def note() -> str:
    """A note to subscribe to."""
    return "a note"


@server.tool()
def whoami() -> str:
    """The pid of the worker that answered."""
    return f"{os.getpid()}"


@server.tool()
def touch(uri: str = "memo://note") -> str:
    """The note changed: resources/updated to its subscribers, whichever worker is their home."""
    server.notify_resource_updated(uri)
    return f"touched on {os.getpid()}"


@server.tool()
def stall(ctx: Context) -> str:
    """A log line, then nothing until it is cancelled (or its worker dies)."""
    ctx.info(f"stalling on {os.getpid()}")
    ctx.sleep(3600)
    return "never"


# keepalive: a stream whose client went away is found (and its thread freed) within half a second
wsgi_app = server.wsgi_app(
    stateless=False,
    keepalive=0.5,
    max_streams_per_client=int(os.environ.get("FAILOVER_STREAM_CAP", "32")),
)
