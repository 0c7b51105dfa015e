"""Authorization for MCP over HTTP (OAuth 2.1): the client, the protected server, and a demo
authorization server.

- :mod:`mcp_ref.oauth.client`: :class:`~mcp_ref.oauth.client.OAuth`, the client (``Client.http(url, auth=OAuth())``).
- :mod:`mcp_ref.oauth.discovery`: challenges, protected resource and authorization server metadata.
- :mod:`mcp_ref.oauth.browser`: the user's part (a browser and a loopback listener, or your function).
- :mod:`mcp_ref.oauth.store`: where registrations and tokens are kept (memory, a 0600 file).
- :mod:`mcp_ref.oauth.assertions`, :mod:`mcp_ref.oauth.dpop`: the OAuth extensions (the ``auth`` extra).
- :mod:`mcp_ref.workbench.login`: the ``mcp-ref`` command's login, cache and masked trace.
- :mod:`mcp_ref.oauth.resource`: an MCP server as a protected resource (``wsgi_app(auth=...)``).
- :mod:`mcp_ref.oauth.jwt_verifier`: JWT access tokens checked against a JWKS (the ``auth`` extra).
- :mod:`mcp_ref.oauth.pkce`: Proof Key for Code Exchange (RFC 7636), S256 only.
- :mod:`mcp_ref.workbench.demo_auth_server`: a small authorization server for teaching and tests, never
  production (issue 9 §3).

Nothing here is imported by ``import mcp_ref``; the core needs nothing beyond the standard
library and ``requests``.
"""
