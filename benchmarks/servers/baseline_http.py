"""A reference point for the HTTP benchmark: a bare standard library HTTP server.

Started by ``benchmarks/bench.py`` in its own process, as::

    python benchmarks/servers/baseline_http.py PORT

A ``ThreadingHTTPServer`` on 127.0.0.1:PORT (HTTP/1.1 keep-alive) that answers
every POST with one canned JSON-RPC ``tools/call`` result, the usual way
(``send_response``, ``send_header``, ``end_headers``, ``write``).  It shows the
ceiling of a stdlib server on the machine.  TCP_NODELAY as in mcp_ref's
server: without it the body, written after the headers, waits for the client's
delayed ACK and the server manages ~200 req/s.
"""

import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}'


class Handler(BaseHTTPRequestHandler):
    """Reads the request body, answers ``BODY``; logs nothing."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        """Answer any POST with the canned result."""
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        """No access log."""


class BaselineServer(ThreadingHTTPServer):
    """A thread per connection, TCP_NODELAY on every accepted socket."""

    daemon_threads = True

    def get_request(self):
        """Accept a connection and turn Nagle's algorithm off on it."""
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


def main(argv):
    """Serve on 127.0.0.1, port ``argv[0]``, until terminated."""
    BaselineServer(("127.0.0.1", int(argv[0])), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    import _watch

    _watch.watch_parent()
    sys.exit(main(sys.argv[1:]))
