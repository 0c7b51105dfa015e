"""An mcp_ref stdio server that records which threads read its connection.

Every call of the stdio transport's ``read()`` notes the calling thread's ident (and how many
threads are inside ``read()`` at once).  The tool ``reader_threads()`` returns them, with the
ident of the thread running the tool: ``{"readers": [...], "most_inside": n, "handler": ident}``.
"""

import threading

from mcp_ref import Server
from mcp_ref.stdio import StreamTransport

readers: set[int] = set()
inside = [0, 0]  # [threads inside read() now, the most ever]
noted = threading.Lock()
plain_read = StreamTransport.read


def recorded_read(self):
    """StreamTransport.read, noting who reads."""
    with noted:
        readers.add(threading.get_ident())
        inside[0] += 1
        inside[1] = max(inside)
    try:
        return plain_read(self)
    finally:
        with noted:
            inside[0] -= 1


StreamTransport.read = recorded_read  # type: ignore[method-assign]
server = Server("threads", version="1.0")


@server.tool()
def reader_threads() -> dict:
    """The idents of the threads that read the connection so far, and this handler's."""
    with noted:
        return {
            "readers": sorted(readers),
            "most_inside": inside[1],
            "handler": threading.get_ident(),
        }


if __name__ == "__main__":
    server.run_stdio()
