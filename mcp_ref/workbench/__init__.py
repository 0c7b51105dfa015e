"""Tools for people, built on the library and never imported by it: the ``mcp-ref`` command, the
demo and walkthrough, ``check``, diagrams, the demo authorization
server (the standard-library HTTP server is :mod:`mcp_ref.http.wsgi_server`)."""
