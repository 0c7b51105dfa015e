"""MCP over HTTP: the client transports (``requests``), the WSGI application (:mod:`mcp_ref.http.server`)
and the standard-library HTTP server that runs it."""
