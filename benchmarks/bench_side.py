"""One side of a client measurement, in its own interpreter: an mcp_ref client making echo calls.

``bench.py`` runs this file as a program, once per figure and tree::

    PYTHONPATH=TREE python benchmarks/bench_side.py '{"mode": "stdio", "era": "handshake", ...}'

so that the ``mcp_ref`` measured is ``TREE``'s (the checkout's, or with
``--against`` the exported revision's), client and server alike, and so that
pinning to one CPU touches only this process and the server it starts.  It
prints one JSON object on its last line of output.  The spec's keys:

``mode``
    ``"stdio"``: ``Client.stdio`` starts ``servers/mcp_ref_stdio_echo.py``
    (its ``mcp_ref`` taken from the same ``PYTHONPATH``); ``"http"``:
    ``Client.http(url)`` against a running server whose ``server_pid`` is given.
``era``
    ``"handshake"`` or ``"modern"`` (2026-07-28), passed as ``era=``.
``pin``
    True: this process is restricted to one CPU (the first it may use) before
    anything else starts; threads and the server process it starts inherit
    the mask, so client and server share that CPU and the wall time of a
    sequential call is the two processes' CPU time.
``calls``, ``rounds``, ``warmup``, ``threads``
    ``rounds`` timed rounds of ``calls`` calls after ``warmup`` untimed ones;
    ``threads`` > 1: that many threads share the one client.

For each round: wall µs per call, the client process's CPU µs per call and
the server process's (:func:`process_cpu_ns`), and calls/s; medians of each.
Only the standard library is imported at module level; the launcher
(:func:`run_side`) is used by ``bench.py`` and ``bench_against.py``.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STDIO_SERVER = os.path.join(HERE, "servers", "mcp_ref_stdio_echo.py")
ECHO_TEXT = "hi"
#: Environment variables that would distort a child interpreter's figures.
DISTORTING_ENV = (
    "PYTHONPROFILEIMPORTTIME",
    "PYTHONDEVMODE",
    "PYTHONTRACEMALLOC",
    "PYTHONDONTWRITEBYTECODE",
)


# --------------------------------------------------------------------------
# CPU time of a process


def schedstat_ns(pid):
    """CPU time (ns) the live threads of process ``pid`` have run: the first field of
    ``/proc/PID/task/*/schedstat``, summed; None where ``/proc`` cannot tell.

    Threads that have exited are no longer listed, so their time is missing:
    :func:`process_cpu_ns` counts them.
    """
    import glob

    total = 0
    found = False
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path, "rb") as f:
                total += int(f.read().split()[0])
            found = True
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between the listing and the read
    return total if found else None


_clock_ids = {}  # pid -> its CPU clock id (or None: not available)


def _cpu_clock_id(pid):
    if pid not in _clock_ids:
        clock = None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            out = ctypes.c_int()
            if libc.clock_getcpuclockid(int(pid), ctypes.byref(out)) == 0:
                clock = out.value
        except (OSError, AttributeError, ValueError):
            clock = None
        _clock_ids[pid] = clock
    return _clock_ids[pid]


def process_cpu_ns(pid):
    """CPU time (ns, user + system) of process ``pid`` so far, its exited threads included.

    The process's POSIX CPU clock (``clock_getcpuclockid``; on Linux the same
    scheduler sum as ``schedstat``'s first field, but kept for the whole
    process); where that clock cannot be had, :func:`schedstat_ns`.  None
    where neither can tell.
    """
    import time

    if pid == os.getpid():
        return time.process_time_ns()
    clock = _cpu_clock_id(pid)
    if clock is not None:
        try:
            return time.clock_gettime_ns(clock)
        except OSError:
            pass
    return schedstat_ns(pid)


def child_pids(pid=None):
    """The process ids of the children of process ``pid`` (default: this one), from
    ``/proc/PID/task/*/children``; empty where ``/proc`` cannot tell."""
    import glob

    kids = []
    for path in glob.glob(f"/proc/{os.getpid() if pid is None else pid}/task/*/children"):
        try:
            with open(path) as f:
                kids += [int(k) for k in f.read().split()]
        except (OSError, ValueError):
            continue
    return sorted(set(kids))


def pin_to_one_cpu():
    """Restrict this process (its calling thread, and so every thread and process started
    after) to the first CPU it may use; return that CPU's number."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


# --------------------------------------------------------------------------
# the rounds


def _median(values):
    import statistics

    return statistics.median(values) if values else None


def shares_of(calls, threads):
    """``calls`` split among ``threads`` as evenly as they go."""
    return [calls // threads + (1 if i < calls % threads else 0) for i in range(threads)]


def run_in_threads(work, shares):
    """One thread per share, each ``work(share)``, released together; the seconds from their release
    until the last ends.  The first error a thread met is raised here, after the join."""
    import threading
    import time

    start, errors = threading.Barrier(len(shares) + 1), []

    def worker(n):
        try:
            start.wait()
            work(n)
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(n,), daemon=True) for n in shares]
    for t in workers:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in workers:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return elapsed


def timed_rounds(call, calls, rounds, warmup, threads=1, server_pid=None):
    """``rounds`` rounds of ``calls`` calls of ``call()`` (``threads`` threads sharing them).

    Returns per-round lists ``wall_us``, ``client_us``, ``server_us``,
    ``cpu_us`` (client + server; per call; the last two empty without
    ``server_pid``) and ``rate`` (calls/s), and their medians under
    ``<name>_median``.
    """
    import time

    me = os.getpid()
    if server_pid:
        process_cpu_ns(server_pid)  # looks its clock up (loading ctypes) before any round
    for _ in range(warmup):
        call()
    shares = shares_of(calls, threads)
    out = {"wall_us": [], "client_us": [], "server_us": [], "cpu_us": [], "rate": []}

    def work(n):
        for _ in range(n):
            call()

    for _ in range(rounds):
        if threads == 1:  # the wall time brackets the CPU readings
            t0 = time.perf_counter()
            c0, s0 = process_cpu_ns(me), server_pid and process_cpu_ns(server_pid)
            for _ in range(calls):
                call()
            s1, c1 = server_pid and process_cpu_ns(server_pid), process_cpu_ns(me)
            elapsed = time.perf_counter() - t0
        else:
            c0, s0 = process_cpu_ns(me), server_pid and process_cpu_ns(server_pid)
            elapsed = run_in_threads(work, shares)
            c1, s1 = process_cpu_ns(me), server_pid and process_cpu_ns(server_pid)
        out["wall_us"].append(elapsed * 1e6 / calls)
        out["rate"].append(calls / elapsed)
        out["client_us"].append((c1 - c0) / 1e3 / calls)
        out["server_us"].append(
            (s1 - s0) / 1e3 / calls if s0 is not None and s1 is not None else None
        )
        out["cpu_us"].append(
            None if out["server_us"][-1] is None else out["client_us"][-1] + out["server_us"][-1]
        )
    if None in out["server_us"]:
        out["server_us"] = out["cpu_us"] = []
    for key in ("wall_us", "client_us", "server_us", "cpu_us", "rate"):
        out[key + "_median"] = _median(out[key])
    return out


def _echo_call(client):
    args = {"text": ECHO_TEXT}

    def call():
        result = client.call_tool("echo", args)
        if result.is_error or result.content[0].text != ECHO_TEXT:
            raise AssertionError(f"unexpected echo result: {result!r}")

    return call


def run(spec):
    """Measure what ``spec`` (see the module docstring) asks for; return the figures."""
    cpu = pin_to_one_cpu() if spec.get("pin") else None  # before any thread or process starts
    import mcp_ref
    from mcp_ref import Client

    era = spec["era"]
    if spec["mode"] == "stdio":
        client = Client.stdio(
            [sys.executable, spec.get("server", STDIO_SERVER)], env=dict(os.environ), era=era
        )
    else:
        client = Client.http(spec["url"], era=era)
    with client:
        if client.era != era:
            raise RuntimeError(f"era={era!r} settled on the {client.era!r} era")
        if spec["mode"] == "stdio":
            kids = child_pids()
            if len(kids) != 1:
                raise RuntimeError(f"expected one child process (the server), found {kids!r}")
            server_pid = kids[0]
            server_cpus = sorted(
                os.sched_getaffinity(server_pid)
            )  # the CPUs it may use: the client's mask
        else:
            server_pid, server_cpus = spec.get("server_pid"), None
        figures = timed_rounds(
            _echo_call(client),
            spec["calls"],
            spec["rounds"],
            spec["warmup"],
            spec.get("threads", 1),
            server_pid,
        )
    figures.update(
        era=era,
        pinned_cpu=cpu,
        server_cpus=server_cpus,
        mcp_ref_file=os.path.abspath(mcp_ref.__file__),
    )
    return figures


# --------------------------------------------------------------------------
# the launcher (in bench.py's process)


def side_env(tree, pycache=None):
    """Environment for a child interpreter measuring ``tree``: ``PYTHONPATH=tree`` alone,
    no distorting flags; ``pycache``: a ``PYTHONPYCACHEPREFIX`` (bytecode kept out of the trees)."""
    env = {k: v for k, v in os.environ.items() if k not in DISTORTING_ENV}
    env["PYTHONPATH"] = tree
    if pycache:
        env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def run_side(tree, spec, cwd=None, timeout=900.0, pycache=None):
    """Run this file for ``spec`` with ``tree``'s mcp_ref; return its figures.

    Raises RuntimeError (with the child's stderr) when it fails, or when the
    ``mcp_ref`` it measured is not ``tree``'s.
    """
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mcp_ref_bench_side_") as neutral:
        done = subprocess.run(
            [sys.executable, os.path.abspath(__file__), json.dumps(spec)],
            env=side_env(tree, pycache),
            cwd=cwd or neutral,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if done.returncode != 0:
        raise RuntimeError(
            f"bench_side {spec.get('mode')} ({spec.get('era')}) failed with status"
            f" {done.returncode}: {done.stderr.strip()[-1500:]}"
        )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    root = os.path.realpath(tree) + os.sep
    if not os.path.realpath(figures["mcp_ref_file"]).startswith(root):
        raise RuntimeError(f"measured {figures['mcp_ref_file']}, not the mcp_ref of {tree}")
    return figures


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))))
