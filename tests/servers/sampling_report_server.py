"""A server whose tool ``ask`` asks the client to sample, and returns what the client answered:
the sampled text, or the error the client sent instead (its message as the server received it)."""

from mcp_ref import Context, McpError, Server

server = Server("sampling-report")


@server.tool()
def ask(ctx: Context) -> str:
    """Sample "hello" from the client; the reply, or the client's error."""
    try:
        result = ctx.sample("hello")
    except McpError as exc:
        return f"the client's error: {exc.message}"
    return f"sampled: {result.text}"


if __name__ == "__main__":
    server.run()
