"""Shared state: the stores a server's extensions keep, each behind a declared interface
(:mod:`mcp_ref.state.stores`, in memory), a server's changes carried across processes
(:mod:`mcp_ref.state.changes`), and
the same stores on Redis (:mod:`mcp_ref.state.redis`)."""
