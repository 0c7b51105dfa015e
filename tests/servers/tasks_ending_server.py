"""A stdio server with one 2025-11-25 task tool, ``until_stopped``, that runs until it is cancelled
(tests/extensions/test_tasks_2025.py).  It reports progress once it runs; once ``run_stdio()`` has
returned (its input ended), it says on stderr whether the task's handler was told to stop, waiting
at most the seconds given as its argument.

python tests/servers/tasks_ending_server.py 5
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Server

server = Server("tasks-ending", version="1.0")
stopped = threading.Event()


@server.tool(task="required")
def until_stopped(ctx: Context) -> str:
    """Runs until it is cancelled."""
    ctx.start_task()
    ctx.report_progress(1)  # it runs
    try:
        ctx.sleep(3600)  # raises as soon as the task is cancelled
    finally:
        stopped.set()
    return "never cancelled"


if __name__ == "__main__":
    server.run_stdio()
    told = stopped.wait(float(sys.argv[1]))
    print("the task was told to stop" if told else "the task runs on", file=sys.stderr, flush=True)
