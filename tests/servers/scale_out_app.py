"""The app of tests/state/test_scale_out.py, run by gunicorn as two deployments of one worker each.

Its state is the one ``MCP_REF_STATE`` names (Redis), or, unset, each process's own memory: the
documented single-process behaviour, the control.  Every answer says which process gave it.
"""

import os

from mcp_ref import Context, Server

server = Server("scale-out", rate_limit=os.environ.get("SCALE_OUT_SERVER_LIMIT", "100/minute"))


@server.tool(rate_limit="3/minute")
def limited() -> str:
    """At most three calls a minute per caller, over every worker together when the state is shared."""
    return f"pid {os.getpid()}"


@server.tool()
def whoami() -> str:
    """The pid of the worker that answered."""
    return f"pid {os.getpid()}"


@server.tool(task="required")
def until_cancelled(ctx: Context) -> str:
    """A task that runs until it is cancelled (from whichever worker)."""
    ctx.start_task()
    ctx.sleep(3600)
    return "never"


@server.tool()
def greet(ctx: Context) -> str:
    """One round of input (MRTR): the retry may reach another worker, with the sealed requestState."""
    answer = ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        key="user_name",
    )
    return f"Hello, {answer.content['name']}, from pid {os.getpid()}!"


@server.tool()
def polled(ctx: Context) -> str:
    """A log line, then the SSE connection closed (polling): the client resumes, maybe on another worker."""
    ctx.info(f"step one on pid {os.getpid()}")
    ctx.close_sse_stream()
    ctx.sleep(0.2)
    ctx.info("step two")
    return f"done on pid {os.getpid()}"


@server.tool()
def add_tool(name: str) -> str:
    """Register a tool named ``name`` here: tools/list_changed goes to every worker's listeners."""
    server.add_tool(lambda: "late", name=name, description="added at run time")
    return f"added {name} on pid {os.getpid()}"


#: The deployment's public URL: the same for every worker behind one balancer (RFC 8707 audience).
RESOURCE = "https://mcp.example/mcp"


class Tokens:
    """A token verifier: ``<user>-token`` is user's, for one client, issued for RESOURCE."""

    def verify(self, token: str):
        from mcp_ref.oauth.resource import AccessInfo

        user = token.removesuffix("-token")
        if not token.endswith("-token") or user not in ("alice", "bob"):
            return None
        return AccessInfo("scale-out-client", user, (), audience=(RESOURCE,))


# keepalive: a stream whose client went away is found (and its thread freed) within half a second
options: dict = {"stateless": os.environ.get("SCALE_OUT_STATELESS", "1") == "1", "keepalive": 0.5}
if os.environ.get("SCALE_OUT_PROTECTED") == "1":
    from mcp_ref.oauth.resource import ProtectedResource

    options["auth"] = ProtectedResource(Tokens(), ["https://as.example"], resource=RESOURCE)
wsgi_app = server.wsgi_app(**options)
