"""A stdio server whose tool ``big`` answers ``n`` bytes of text (tests/protocol/test_stdio_odd_peers.py)."""

from mcp_ref import Server

server = Server("big-answers")


@server.tool
def big(n: int) -> str:
    """``n`` bytes of text."""
    return "x" * n


server.run_stdio()
