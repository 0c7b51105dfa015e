"""Tools for people, built on the library and never imported by it: the ``mcp-ref`` command, the
demo and walkthrough, ``check``, diagrams, the standard-library HTTP server and its limits, the demo
authorization server."""
