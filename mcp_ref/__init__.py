"""mcp_ref: a synchronous reference implementation of the Model Context Protocol."""
