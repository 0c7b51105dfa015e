"""A launcher in the style of npx/uvx: start the real server as a child and wait for it.

    python stdio_launcher.py COMMAND [ARG ...]

The child inherits stdin/stdout/stderr; the launcher never reads stdin, so it
does not notice the client closing it.  SIGTERM has its default action here
(the launcher dies at once), and the launcher does not pass it on, so a client
that signalled only its direct child would leave the real server orphaned.
"""

import subprocess
import sys

if __name__ == "__main__":
    child = subprocess.Popen(sys.argv[1:])
    sys.exit(child.wait())
