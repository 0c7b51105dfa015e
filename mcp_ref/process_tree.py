"""Ending a stdio server that does not go by itself, or leaves processes behind (POSIX).

:meth:`~mcp_ref.stdio.SubprocessTransport.close` closes the server's stdin and waits;
what follows is here (2025-11-25 basic/lifecycle §Shutdown, stdio): :func:`end_server` sends
SIGTERM, waits, then SIGKILL to the server's process group, ends what is left of the group (the
children of launchers like ``npx`` or ``uvx``), and then the server's descendants outside it.

Signals to the group miss a descendant that left it (``setsid``, ``setpgid``), and one whose parent
has exited (a double fork) is no longer linked to the server at all.  :class:`ProcessTree` finds
both (Linux, /proc): by parent links from the server and from each process already found, and by
the token every descendant inherits in its environment (``MCP_REF_STDIO_TREE``), unless it
replaced its environment.  Each process is known by pid and start time, so a reused pid is never
signalled.  What no client can find: a double-forked daemon that also replaced its environment (a
cgroup, e.g. ``systemd-run --user --scope``, contains that), and descendants elsewhere than Linux.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: The most processes one tree tracks; past it, the rest is neither tracked nor signalled.
MAX_TRACKED = 10_000
#: How often a wait for processes that are not our children looks again (seconds): nothing
#: tells when such a process ends, so the wait polls, bounded by the shutdown timeout.
POLL = 0.02

#: pid -> (parent pid, process group, state, start time), as ``/proc/PID/stat`` gives them.
Table = dict[int, tuple[int, int, bytes, int]]


def proc_table() -> Table:
    """Linux: every process (see :data:`Table`)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0], int(fields[19]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def signal_group(group: int, sig: int) -> None:
    """Send ``sig`` to process group ``group`` (nothing if it is gone, or not ours)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def group_alive(group: int) -> bool:
    """True while a process of ``group`` is still running.

    ``killpg(group, 0)`` also succeeds for zombies, which an init that does not
    reap orphans (some containers) keeps forever; on Linux, /proc tells them apart.
    """
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    if not os.path.isdir("/proc/self"):
        return True
    return any(pgrp == group and state != b"Z" for _, pgrp, state, _ in proc_table().values())


def end_server(process: subprocess.Popen, tree: ProcessTree | None, timeout: float) -> None:
    """After its stdin was closed and ``timeout`` waited: SIGTERM to the server's group, and
    SIGKILL past ``timeout``; then the same to what is left of the group; then ``tree``."""
    group = process.pid
    if process.poll() is None:
        signal_group(group, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            signal_group(group, signal.SIGKILL)
            process.wait()
    # The leader is gone; its children (npx -> node, uvx -> python) may not be.
    if group_alive(group):
        signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while group_alive(group) and time.monotonic() < deadline:
            time.sleep(POLL)
        if group_alive(group):
            signal_group(group, signal.SIGKILL)
    if tree is not None:
        tree.end(timeout)


class ProcessTree:
    """The live descendants of the server ``root``, whatever their process group or session (at
    most :data:`MAX_TRACKED`), found when it is made (while the server runs: by parent links) and
    again before each signal (from those found, and ``carriers()``: the processes that carry the
    server's token), and ended by :meth:`end`."""

    def __init__(self, root: int, carriers: Callable[[], list[int]]):
        self.carriers = carriers
        self.found: dict[int, int] = {}  # pid -> start time
        self.collect(root)

    def collect(self, root: int | None = None) -> Table:
        """Add the descendants running now to those found; the process table read."""
        table = proc_table()
        children: dict[int, list[int]] = {}
        for pid, (parent, _, _, _) in table.items():
            children.setdefault(parent, []).append(pid)
        todo = ([root] if root is not None else []) + self.running(table) + self.carriers()
        seen: set[int] = set()
        while todo and len(self.found) < MAX_TRACKED:
            pid = todo.pop()
            if pid in seen or pid not in table:
                continue
            seen.add(pid)
            if pid != root and table[pid][2] != b"Z":
                self.found[pid] = table[pid][3]
            todo.extend(children.get(pid, ()))
        return table

    def running(self, table: Table) -> list[int]:
        """Those found that still run in ``table`` (the same processes: their start times match)."""
        alive = {pid: started for pid, (_, _, state, started) in table.items() if state != b"Z"}
        return [pid for pid, started in self.found.items() if alive.get(pid) == started]

    def end(self, timeout: float) -> None:
        """SIGTERM to each one found still running, and SIGKILL to those left after ``timeout``
        (the tree is collected again before each signal: it may have grown since)."""
        left = self.running(self.collect())
        if not left:
            return
        log.debug("ending %d descendant(s) of the server outside its process group", len(left))
        _signal_each(left, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while left and time.monotonic() < deadline:
            time.sleep(POLL)
            left = self.running(proc_table())
        _signal_each(self.running(self.collect()), signal.SIGKILL)


def _signal_each(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # gone, or not ours
            os.kill(pid, sig)
