"""An mcp_ref stdio server whose tools leave work behind when they answer.

    python stdio_left_behind.py

``leave_reporter``: starts a thread that, once ``release_reporter`` is called, reports progress
for the (long answered) ``leave_reporter`` call 500 times; ``release_reporter`` answers how many
of those reports were sent (``ctx.report_progress`` returned True) once the thread is done.

``spawn_session_leader(pidfile, orphan)``: starts a process that calls ``os.setsid()`` (leaving
the server's session and process group), writes its pid to ``pidfile`` and sleeps; with
``orphan`` it is started through a process that exits at once, so its parent is no longer the
server (a double fork).  Answers its pid once the file is written.
"""

from __future__ import annotations

import subprocess
import sys
import threading

from mcp_ref import Context, Server

WAIT = 10.0  # seconds: the bound of every blocking wait here
REPORTS = 500

#: The process that leaves the session: its pid to the file, then "ready" on stdout, then sleep.
SESSION_LEADER = """
import os, sys, time
os.setsid()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("ready", flush=True)
time.sleep(600)
"""
#: A parent that starts the command it is given and exits without waiting for it.
FIRE_AND_EXIT = "import subprocess, sys; subprocess.Popen(sys.argv[1:])"

server = Server("left-behind", version="1.0")
release = threading.Event()
finished = threading.Event()
sent: list[bool] = []


@server.tool()
def leave_reporter(ctx: Context) -> str:
    """Answer at once; a thread left behind reports this call's progress once released."""

    def report_later() -> None:
        try:
            if release.wait(WAIT):
                sent.extend(ctx.report_progress(step, REPORTS) for step in range(1, REPORTS + 1))
        finally:
            finished.set()

    ctx.report_progress(0, REPORTS)  # one while the call runs: the token works
    threading.Thread(target=report_later, daemon=True).start()
    return "answered"


@server.tool()
def release_reporter() -> int:
    """Let the thread report, wait until it is done, and answer how many reports it sent."""
    release.set()
    if not finished.wait(WAIT):
        raise RuntimeError("the reporting thread did not finish")
    return sum(sent)


@server.tool()
def spawn_session_leader(pidfile: str, orphan: bool = False) -> int:
    """Start a process in a session of its own (with ``orphan``, through a parent that exits)."""
    command = [sys.executable, "-c", SESSION_LEADER, pidfile]
    if orphan:
        command = [sys.executable, "-c", FIRE_AND_EXIT, *command]
    starter = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert starter.stdout is not None
    ready = starter.stdout.readline()  # from the session leader (its parent only passes it on)
    starter.stdout.close()
    if ready != b"ready\n":
        raise RuntimeError("the session leader did not start")
    if orphan:
        starter.wait(WAIT)  # its parent has exited: no parent link leads from the server to it
    with open(pidfile) as file:
        return int(file.read())


if __name__ == "__main__":
    server.run_stdio()
