"""Authorization for MCP over HTTP (OAuth 2.1): what the client, the protected server and the demo
authorization server share.

- :mod:`mcp_ref.auth.pkce`: Proof Key for Code Exchange (RFC 7636), S256 only.
- :mod:`mcp_ref.auth.demo_server`: a small authorization server for teaching and tests, never
  production (issue 9 §3).

Nothing here is imported by ``import mcp_ref``; the core needs nothing beyond the standard
library and ``requests``.
"""
