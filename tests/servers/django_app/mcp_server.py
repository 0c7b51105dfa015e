"""The MCP server the Django project mounts: its tools read the HTTP request (``ctx.http``)."""

from mcp_ref import Context, Server

server = Server("django-mounted")


@server.tool()
def whoami(ctx: Context) -> dict:
    """Who the Django app says is calling, and the HTTP request the call came in on."""
    http = ctx.http
    return {
        "user": str(http.user),
        "path": http.path,
        "method": http.method,
        "cookie": http.cookies.get("user"),
        "agent": http.headers.get("x-agent"),
    }


@server.tool()
def confirm(question: str, ctx: Context) -> str:
    """Ask the user (an elicitation on this POST's SSE stream), then answer with the reply."""
    reply = ctx.elicit(
        question, {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    )
    return f"{reply.action}:{(reply.content or {}).get('ok')}"


@server.tool()
def count(n: int, ctx: Context) -> str:
    """Report progress n times, then answer (an SSE stream through the Django view)."""
    for i in range(n):
        ctx.report_progress(i + 1, n, f"step {i + 1}")
    return f"counted {n}"
