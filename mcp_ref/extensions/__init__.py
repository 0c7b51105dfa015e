"""The extensions, each plugged into the roles through :class:`mcp_ref.extension.Extension`: policy
and rate limits, both task protocols, file roots, the client's approval of server requests.  Loaded
only when used."""

#: The names :mod:`mcp_ref` exports from the extras, and the module of each (below ``mcp_ref``):
#: ``from mcp_ref import OAuth`` reads this table on first use, so the package's own table
#: (``mcp_ref._HOMES``, the protocol and the roles) names no extra.
EXPORTS = {
    "OAuth": "oauth.client",
    "AuthorizationError": "oauth.errors",
    "RateLimit": "extensions.ratelimit",
    "ServerRequest": "extensions.approval",
    "ProxyServer": "proxy.server",
    "proxy_server": "proxy.server",
}
