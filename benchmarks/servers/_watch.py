"""Parent watch for the benchmark's servers: exit once the benchmark is gone.

Every server under ``benchmarks/servers/`` calls :func:`watch_parent` first
thing.  The benchmark stops its servers itself (in ``finally`` blocks), but if
the benchmark is killed, or aborted by its ``--timeout``, a daemon thread here
notices that the parent process has changed and ends the server, so no server
outlives a run.  The servers import it as ``_watch``: Python puts a script's
own folder first on ``sys.path``.
"""

import os
import threading
import time


def watch_parent(interval=0.5):
    """Start a daemon thread that ends this process (``os._exit(0)``) once its parent has gone."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(0)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()
