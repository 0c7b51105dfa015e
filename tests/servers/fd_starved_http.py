"""An HTTP server that runs itself out of file descriptors, for tests/http/test_connections.py.

It serves the demo on 127.0.0.1 (port 0), prints ``cap <max_connections fitted to the open-file
limit>``, then (unless given ``--no-starve``) opens /dev/null until no descriptor is left,
holding them, and prints ``ready <url>``.  A line ``free`` on stdin closes what it holds
(answered ``freed``).  Logs at DEBUG on stderr.
"""

import logging
import os
import sys
import threading

from mcp_ref.workbench.demo import build_server

logging.basicConfig(
    level=logging.DEBUG, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s"
)
httpd = build_server().http_server("127.0.0.1", 0, stateless=True)
print("cap", httpd.connections.cap, flush=True)
threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
held = []
if "--no-starve" not in sys.argv:
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
print("ready", httpd.url, flush=True)
for line in sys.stdin:
    if line.strip() == "free":
        for fd in held:
            os.close(fd)
        held.clear()
        print("freed", flush=True)
