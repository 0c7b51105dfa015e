"""The extensions, each plugged into the roles through :class:`mcp_ref.extension.Extension`: policy
and rate limits, both task protocols, file roots, the client's approval of server requests.  Loaded
only when used."""
