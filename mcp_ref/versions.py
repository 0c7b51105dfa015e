"""The versions every module reads: this package's own, and the protocol revisions it speaks
(``mcp_ref.__version__`` and the top-level constants are these)."""

__version__ = "0.1.0"

#: The protocol revisions mcp_ref speaks with a handshake (``initialize``), newest first.
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = SUPPORTED_VERSIONS[0]
#: The modern revisions (no ``initialize``: each request carries its version in ``_meta``), newest
#: first.  A server answers them beside SUPPORTED_VERSIONS (see :mod:`mcp_ref.envelope`).
MODERN_VERSIONS = ("2026-07-28",)
