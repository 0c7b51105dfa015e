"""The demo server plus a resource and a prompt whose functions raise, for tests/protocol/test_bad_input.py.

Tool exceptions become ``isError`` results; a failing resource or prompt
function is how a handler exception reaches the JSON-RPC layer (-32603).
"""

import logging
import sys

from mcp_ref.workbench.demo import build_server

SECRET = "secret-detail-in-/srv/private/boom.py"

logging.basicConfig(
    level=logging.WARNING, stream=sys.stderr, format="demo-failing: %(levelname)s: %(message)s"
)

server = build_server()


@server.resource("test://boom", mime_type="text/plain", description="Always fails.")
def boom() -> str:
    raise RuntimeError(SECRET)


@server.prompt()
def broken() -> str:
    """Always fails."""
    raise KeyError(SECRET)


if __name__ == "__main__":
    server.run_stdio()
