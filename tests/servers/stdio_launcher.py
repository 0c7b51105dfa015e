"""A launcher in the style of npx/uvx: start the real server as a child and wait for it.

    python stdio_launcher.py [--setsid] COMMAND [ARG ...]

The child inherits stdin/stdout/stderr; the launcher never reads stdin, so it
does not notice the client closing it.  SIGTERM has its default action here
(the launcher dies at once), and the launcher does not pass it on, so a client
that signalled only its direct child would leave the real server orphaned.
With ``--setsid`` the child starts a session of its own, leaving the launcher's process
group, so that signals to the group do not reach it either.
"""

import subprocess
import sys

if __name__ == "__main__":
    setsid = sys.argv[1] == "--setsid"
    child = subprocess.Popen(sys.argv[2:] if setsid else sys.argv[1:], start_new_session=setsid)
    sys.exit(child.wait())
