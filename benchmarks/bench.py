"""Throughput and import-time figures for mcp_ref, next to the official MCP Python SDK.

Run it from anywhere as ``python benchmarks/bench.py`` (``--quick`` for a
smoke run); it prints figures, it is not a test, and it is not part of the
installed package.  It measures the mcp_ref of the checkout it sits in (the
folder above ``benchmarks/``), through mcp_ref's public API only; the server
programs it starts are the files in ``benchmarks/servers/``.

What is measured:

* import time of ``mcp_ref`` (and of ``mcp``, the official SDK, when installed),
  warm (bytecode cached): wall time of ``python -c "import X"`` minus
  ``python -c "pass"``, paired in fresh subprocesses, and the cumulative figure
  of ``python -X importtime``; medians over the repetitions;
* ``tools/call`` round trips of an ``echo`` tool over stdio, client and server
  both from the same implementation: one caller doing sequential calls, then
  8 concurrent callers sharing one client (threads for mcp_ref, asyncio tasks
  over one ``ClientSession`` for the SDK); calls/s, median over the rounds;
  mcp_ref's server is ``servers/mcp_ref_stdio_echo.py``;
* mcp_ref over stdio in each era (``era="handshake"``, ``era="modern"``), each
  figure in a fresh ``bench_side.py`` process: sequential with client and
  server pinned to one CPU (the wall time is then the two processes' CPU
  time, and repeats within a few percent), sequential unpinned, and 8 threads
  unpinned; calls/s, wall µs per call, and the CPU µs per call of the client
  process and of the server process (their POSIX CPU clocks; ``schedstat``
  where those cannot be had);
* the same over Streamable HTTP (JSON replies, keep-alive connections), each
  server in its own subprocess (its own GIL) and in stateless mode:
  ``Server.run_http(stateless=True, json_response=True)`` for mcp_ref, an
  ``MCPServer`` app (``json_response=True, stateless_http=True``) under uvicorn
  for the SDK; ``Client.http`` with threads against the first,
  ``streamable_http_client`` + ``ClientSession`` with asyncio tasks against the
  second; in both eras, against the same server: the handshake
  (``Client.http(era="handshake")``; the SDK's ``initialize()``), then the
  stateless 2026-07-28 revision (``era="modern"``; the SDK's ``discover()``),
  where every request carries its envelope in ``_meta`` and needs no session;
* server capacity: bare ``tools/call`` POSTs from ``wrk -t2 -c8`` when it is
  on PATH, else from a Python load generator (8 threads, one keep-alive
  ``http.client`` connection each); requests/s, median over the runs, the runs
  of the servers interleaved.  Two POSTs, to the same stateless servers: the
  handshake era's (``MCP-Protocol-Version: 2025-11-25``, no initialize:
  stateless mode) and 2026-07-28's (the ``_meta`` envelope, and the
  ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers).  A bare
  standard library ``ThreadingHTTPServer`` answering canned JSON is measured
  the same way, as the ceiling of a stdlib server on this machine.

The two eras' HTTP figures are printed side by side, with their ratio
(2026-07-28 / handshake) per implementation.

* shared state (issue 22; ``state_bench.py``): a rate-limited ``tools/call``
  against an mcp_ref deployment keeping its state in memory and one keeping it
  on a fresh ``redis-server`` (``MCP_REF_STATE``): p50/p99 latency and server
  CPU per call; and the delay for a change on one worker to reach a listener on
  another.  Run when a ``redis-server`` binary and redis-py are installed (else
  a note); ``--state-only`` runs these rows alone.

``--against REV`` measures this checkout's work tree against git revision
``REV`` instead, alternated in one run (``bench_against.py``).

Options: ``--quick``, ``--calls N``, ``--rounds R``, ``--json``, ``--skip-http``,
``--http-only``, ``--state-only``, ``--skip-state``, ``--against REV``,
``--pairs N``; see ``--help``.  Every server process is stopped in a ``finally`` block, and
watches its parent (``servers/_watch.py``): it exits by itself if the
benchmark dies.  All heavy imports stay inside functions so that importing
this module is cheap.
"""

from __future__ import annotations

import os
import sys

CONCURRENCY = 8
#: The SDK's client and server classes: ``MCPServer`` from mcp 2 on (``FastMCP`` before).
SDK_CLIENT_AND_SERVER = (
    "from mcp import ClientSession\n"
    "try:\n    from mcp.server.mcpserver import MCPServer\n"
    "except ImportError:\n    from mcp.server.fastmcp import FastMCP"
)
ECHO_TEXT = "hi"

# The server programs, one file each (see their docstrings); each watches its
# parent (servers/_watch.py), so that none outlives the benchmark.
SERVERS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "servers")
SDK_STDIO_SERVER = os.path.join(SERVERS_DIR, "sdk_stdio_echo.py")
SDK_HTTP_SERVER = os.path.join(SERVERS_DIR, "sdk_http_echo.py")
MCP_REF_HTTP_SERVER = os.path.join(SERVERS_DIR, "mcp_ref_http_echo.py")
MCP_REF_STDIO_SERVER = os.path.join(SERVERS_DIR, "mcp_ref_stdio_echo.py")
BASELINE_HTTP_SERVER = os.path.join(SERVERS_DIR, "baseline_http.py")

HTTP_PATH = "/mcp"
HTTP_PROTOCOL_VERSION = "2025-11-25"
# One tools/call, POSTed as is (no session: the servers under load are stateless).
TOOLS_CALL_BODY = (
    '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    f'"params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}}}}}}'
)
HTTP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": HTTP_PROTOCOL_VERSION,
}
# The same tools/call in the stateless 2026-07-28 revision: the per-request envelope in _meta,
# the version, method and tool name mirrored in headers (mcp_ref's
# transports.http_headers.request_headers writes the same; tests/workbench/test_bench.py checks it).
MODERN_PROTOCOL_VERSION = "2026-07-28"
MODERN_TOOLS_CALL_BODY = (
    '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    f'"params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}},'
    f'"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN_PROTOCOL_VERSION}",'
    '"io.modelcontextprotocol/clientCapabilities":{},'
    '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}'
)
MODERN_HTTP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN_PROTOCOL_VERSION,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "echo",
}
#: The eras measured over HTTP (mcp_ref's ``Client(era=...)`` names), and each one's bare POST.
HTTP_ERAS = ("handshake", "modern")
BARE_POSTS = {
    "handshake": (TOOLS_CALL_BODY, HTTP_HEADERS),
    "modern": (MODERN_TOOLS_CALL_BODY, MODERN_HTTP_HEADERS),
}
ERA_LABELS = {"handshake": "handshake", "modern": MODERN_PROTOCOL_VERSION}


# --------------------------------------------------------------------------
# small helpers


def _median(values):
    import statistics

    return statistics.median(values) if values else None


def _repo_root():
    """The checkout this benchmark belongs to: the folder above ``benchmarks/``."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child_env():
    """Environment for child interpreters: this checkout's mcp_ref importable, no stray flags."""
    env = dict(os.environ)
    root = _repo_root()
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = root if not old else root + os.pathsep + old
    for var in ("PYTHONPROFILEIMPORTTIME", "PYTHONDEVMODE", "PYTHONTRACEMALLOC"):
        env.pop(var, None)
    return env


def _module_available(name):
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# --------------------------------------------------------------------------
# import time


def _importtime_us(stderr_text):
    """Microseconds that ``-X importtime`` charges to the ``-c`` statement.

    Sum of the cumulative figures of the top-level imports after interpreter
    start-up (which ends with ``site``).
    """
    total = 0
    started = False
    for line in stderr_text.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3 or parts[2][:2] == "  ":  # header or nested line
            continue
        name = parts[2].strip()
        if name == "site":
            started = True
            total = 0
            continue
        if started:
            try:
                total += int(parts[1])
            except ValueError:
                continue
    return total if started else None


def measure_import_ms(statement, reps):
    """Import cost of ``statement`` in fresh interpreters, medians over ``reps``, in ms.

    ``wall``: time of ``python -c statement`` minus time of ``python -c pass``,
    the two run back to back in each repetition so that slow drifts of the
    machine cancel out of the paired difference (it counts the extra
    interpreter teardown too; for a tiny package it is within noise and can
    come out negative).
    ``importtime``: what ``python -X importtime`` charges to the statement's
    imports, which is steadier.
    """
    import tempfile

    # Measure a warm import, bytecode cached as for an installed package: with
    # PYTHONDONTWRITEBYTECODE set and no __pycache__ in a source tree, every
    # run would compile the package anew. The cache goes to a temporary
    # directory, not into the tree.
    cache_dir = tempfile.TemporaryDirectory(prefix="mcp_ref_bench_pycache_")
    env = _child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache_dir.name
    try:
        return _measure_import(statement, reps, env)
    finally:
        cache_dir.cleanup()


def _measure_import(statement, reps, env):
    import subprocess
    import time

    cmd_base = [sys.executable, "-c", "pass"]
    cmd_mod = [sys.executable, "-c", statement]
    cmd_itime = [sys.executable, "-X", "importtime", "-c", statement]

    def run(cmd):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0

    # One untimed run of each warms the OS file cache and writes .pyc files.
    run(cmd_base)
    run(cmd_mod)
    diffs = []
    itimes = []
    for _ in range(reps):
        base = run(cmd_base)
        mod = run(cmd_mod)
        diffs.append((mod - base) * 1000.0)
        proc = subprocess.run(
            cmd_itime,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        us = _importtime_us(proc.stderr)
        if us is not None:
            itimes.append(us / 1000.0)
    return {
        "median_ms": _median(diffs),
        "samples_ms": diffs,
        "importtime_median_ms": _median(itimes),
        "importtime_samples_ms": itimes,
    }


# --------------------------------------------------------------------------
# mcp_ref over stdio


def _mcp_ref_server_cmd():
    """mcp_ref's stdio server: ``servers/mcp_ref_stdio_echo.py`` (one ``echo`` tool, nothing else)."""
    return [sys.executable, MCP_REF_STDIO_SERVER]


def _mcp_ref_echo_check(result):
    if result.is_error or result.content[0].text != ECHO_TEXT:
        raise AssertionError(f"unexpected echo result: {result!r}")


def _threaded_rounds(call, check, calls, rounds, warmup, concurrency):
    """Sequential, then ``concurrency``-thread rounds of ``calls`` echo calls; calls/s per round."""
    import time

    from bench_side import run_in_threads, shares_of

    args = {"text": ECHO_TEXT}
    seq_rates = []
    par_rates = []
    for _ in range(warmup):
        check(call("echo", args))

    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            check(call("echo", args))
        seq_rates.append(calls / (time.perf_counter() - t0))

    def work(n):
        for _ in range(n):
            check(call("echo", args))

    shares = shares_of(calls, concurrency)
    for _ in range(rounds):
        par_rates.append(calls / run_in_threads(work, shares))

    return {
        "sequential": {"median": _median(seq_rates), "rounds": seq_rates},
        "concurrent": {"median": _median(par_rates), "rounds": par_rates},
    }


def bench_mcp_ref(calls, rounds, warmup, concurrency=CONCURRENCY, era="handshake"):
    """Sequential and threaded echo round trips through one mcp_ref client speaking ``era``."""
    from mcp_ref import Client

    with Client.stdio(_mcp_ref_server_cmd(), env=_child_env(), era=era) as client:
        if client.era != era:
            raise RuntimeError(f"the mcp_ref client settled on {client.era!r}")
        return _threaded_rounds(
            client.call_tool, _mcp_ref_echo_check, calls, rounds, warmup, concurrency
        )


#: The stdio figures of each era: (name, pinned to one CPU, threads sharing the client).
STDIO_MODES = (("pinned", True, 1), ("unpinned", False, 1), ("threads", False, CONCURRENCY))
STDIO_MODE_LABELS = {
    "pinned": "sequential, pinned to 1 CPU",
    "unpinned": "sequential, unpinned",
    "threads": f"{CONCURRENCY} threads, unpinned",
}
STDIO_FIGURES = ("rate", "wall_us", "client_us", "server_us")


def bench_mcp_ref_stdio_eras(calls, rounds, warmup, tree=None):
    """The stdio figures of each era (``HTTP_ERAS``) and mode (``STDIO_MODES``), each in a fresh
    ``bench_side.py`` process measuring ``tree``'s mcp_ref (default: this checkout's).

    ``{era: {mode: {figure: median, figure + "_rounds": [...]}}}``, the figures being calls/s
    (``rate``), wall, client CPU and server CPU µs per call (``bench_side.timed_rounds``).
    """
    import bench_side

    out = {}
    for era in HTTP_ERAS:
        for mode, pin, threads in STDIO_MODES:
            spec = {
                "mode": "stdio",
                "era": era,
                "pin": pin,
                "threads": threads,
                "calls": calls,
                "rounds": rounds,
                "warmup": warmup,
            }
            r = bench_side.run_side(tree or _repo_root(), spec)
            cell = out.setdefault(era, {})[mode] = {}
            for name in STDIO_FIGURES:
                cell[name] = r[name + "_median"]
                cell[name + "_rounds"] = r[name]
    return out


def print_stdio_era_table(figures, out=sys.stdout):
    """Print mcp_ref's stdio figures per era and mode: calls/s and µs per call, wall and per side."""
    stdio = figures["mcp_ref"].get("stdio") or {}
    lines = []
    for era in HTTP_ERAS:
        for mode, _, _ in STDIO_MODES:
            cell = stdio.get(era, {}).get(mode)
            if cell:
                us = ["n/a" if cell[k] is None else f"{cell[k]:.1f}" for k in STDIO_FIGURES[1:]]
                lines.append(
                    (
                        f"{ERA_LABELS[era]}, {STDIO_MODE_LABELS[mode]}",
                        _fmt(cell["rate"], "/s"),
                        *us,
                        "",
                    )
                )
    if lines:
        head = (
            "mcp_ref stdio tools/call",
            "calls/s",
            "wall us/call",
            "client CPU us/call",
            "server CPU us/call",
            "",
        )
        _print_rows(head, lines, out)


# --------------------------------------------------------------------------
# official SDK over stdio


def _sdk_echo_check(result):
    if getattr(result, "is_error", None) or getattr(result, "isError", None):
        raise AssertionError(f"SDK echo returned an error: {result!r}")
    if result.content[0].text != ECHO_TEXT:
        raise AssertionError(f"unexpected SDK echo result: {result!r}")


async def _sdk_rounds(session, calls, rounds, warmup, concurrency):
    """Sequential, then ``concurrency``-task rounds of echo calls on one initialized ClientSession."""
    import asyncio
    import time

    args = {"text": ECHO_TEXT}
    seq_rates = []
    par_rates = []
    call = session.call_tool
    for _ in range(warmup):
        _sdk_echo_check(await call("echo", args))

    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            _sdk_echo_check(await call("echo", args))
        seq_rates.append(calls / (time.perf_counter() - t0))

    shares = [
        calls // concurrency + (1 if i < calls % concurrency else 0) for i in range(concurrency)
    ]

    async def worker(n):
        for _ in range(n):
            _sdk_echo_check(await call("echo", args))

    for _ in range(rounds):
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in shares))
        par_rates.append(calls / (time.perf_counter() - t0))

    return {
        "sequential": {"median": _median(seq_rates), "rounds": seq_rates},
        "concurrent": {"median": _median(par_rates), "rounds": par_rates},
    }


async def _bench_sdk_async(server_script, calls, rounds, warmup, concurrency, era):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[server_script])
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await _sdk_start(session, era)
                return await _sdk_rounds(session, calls, rounds, warmup, concurrency)


def bench_sdk(calls, rounds, warmup, concurrency=CONCURRENCY, era="handshake"):
    """Sequential and concurrent echo round trips through one SDK ClientSession speaking ``era``.

    The server is ``servers/sdk_stdio_echo.py``, started (and stopped, in a
    ``finally``) by the SDK's ``stdio_client``.
    """
    import asyncio

    return asyncio.run(_bench_sdk_async(SDK_STDIO_SERVER, calls, rounds, warmup, concurrency, era))


async def _sdk_start(session, era):
    """Start the SDK's ``session`` in ``era``: ``initialize()`` for the handshake; for 2026-07-28
    ``discover()`` (no handshake, an envelope on every request), which it must settle on."""
    if era != "modern":
        await session.initialize()
        return
    if not hasattr(session, "discover"):
        raise RuntimeError(
            f"this SDK's ClientSession has no discover(): no {MODERN_PROTOCOL_VERSION} client"
        )
    await session.discover()
    if getattr(session, "protocol_version", MODERN_PROTOCOL_VERSION) != MODERN_PROTOCOL_VERSION:
        raise RuntimeError(f"the SDK client settled on {session.protocol_version!r}")


# --------------------------------------------------------------------------
# HTTP servers in subprocesses


def _free_port():
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HttpServerProcess:
    """One benchmark HTTP server in its own interpreter, on a free port of 127.0.0.1.

    ``script`` (a file of ``servers/``) is run as ``python script PORT *args``,
    in ``env`` (default: ``_child_env()``).
    Use it as a context manager: the process is terminated (killed if it
    lingers) on exit, whatever happened.
    """

    def __init__(self, name, script, args=(), start_timeout=30.0, env=None):
        self.name = name
        self.script = script
        self.args = [str(a) for a in args]
        self.env = env
        self.start_timeout = start_timeout
        self.proc = None
        self.port = None
        self._stderr = None

    @property
    def url(self):
        """The server's Streamable HTTP endpoint."""
        return f"http://127.0.0.1:{self.port}{HTTP_PATH}"

    def __enter__(self):
        last_error = None
        for _ in range(
            3
        ):  # another process may take the free port between our probe and the server's bind
            try:
                self._start()
                return self
            except _PortLost as exc:
                last_error = exc
                self.stop()
        raise RuntimeError(f"{self.name}: could not start: {last_error}")

    def __exit__(self, *exc_info):
        self.stop()
        return False

    def _start(self):
        import socket
        import subprocess
        import tempfile
        import time

        self.port = _free_port()
        self._stderr = tempfile.TemporaryFile()  # closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, self.script, str(self.port)] + self.args,
            env=_child_env() if self.env is None else self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                tail = self.stderr_tail()
                if "address already in use" in tail.lower():
                    raise _PortLost(tail)
                raise RuntimeError(f"{self.name} exited with status {self.proc.returncode}: {tail}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{self.name} did not accept connections within"
                        f" {self.start_timeout:.0f} s: {self.stderr_tail()}"
                    ) from None
                time.sleep(0.05)

    def stderr_tail(self, limit=600):
        """The last ``limit`` characters the server wrote on stderr."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            text = self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return text[-limit:] if text else "(no stderr)"

    def check_alive(self):
        """Raise RuntimeError (with the server's stderr) unless the process is still running."""
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} is not running: {self.stderr_tail()}")

    def stop(self):
        """Terminate the process (kill it if it lingers) and drop its stderr; safe to call twice."""
        import subprocess

        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


class _PortLost(RuntimeError):
    """The server could not bind the port picked for it (someone else took it first)."""


def http_post_tools_call(url, timeout=10.0, era="handshake"):
    """One bare tools/call POST of ``era`` (``BARE_POSTS``; no session); returns (status, body)."""
    import http.client
    from urllib.parse import urlsplit

    body, headers = BARE_POSTS[era]
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request("POST", parts.path, body=body.encode(), headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def check_bare_tools_call(server, era="handshake"):
    """Fail unless ``server`` answers a bare tools/call POST of ``era`` with a JSON echo result.

    A 2026-07-28 answer must carry ``resultType`` (every modern result does): the server
    served the POST in that era, not as a handshake-era request.
    """
    import json

    server.check_alive()
    status, body = http_post_tools_call(server.url, era=era)
    try:
        message = json.loads(body)
        text = message["result"]["content"][0]["text"]
        if era == "modern" and message["result"].get("resultType") != "complete":
            text = None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        text = None
    if status != 200 or text != ECHO_TEXT:
        raise RuntimeError(
            f"{server.name}: a bare {ERA_LABELS[era]} tools/call POST got HTTP {status}"
            f" {body[:300]!r}, not the echo result"
        )
    server.check_alive()  # the answer came from our server, not from whoever else holds the port


# --------------------------------------------------------------------------
# client-driven HTTP round trips


def bench_mcp_ref_http(url, calls, rounds, warmup, concurrency=CONCURRENCY, era="handshake"):
    """Sequential and threaded echo round trips through one ``Client.http(url, era=era)``."""
    from mcp_ref import Client

    with Client.http(url, era=era) as client:
        if client.era != era:
            raise RuntimeError(f"Client.http(era={era!r}) settled on the {client.era!r} era")
        return _threaded_rounds(
            client.call_tool, _mcp_ref_echo_check, calls, rounds, warmup, concurrency
        )


async def _bench_sdk_http_async(url, calls, rounds, warmup, concurrency, era):
    from mcp import ClientSession

    try:  # mcp >= 2
        from mcp.client.streamable_http import streamable_http_client as connect
    except ImportError:  # mcp 1.x (yields a third item, the session id getter)
        from mcp.client.streamable_http import streamablehttp_client as connect

    async with connect(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await _sdk_start(session, era)
            return await _sdk_rounds(session, calls, rounds, warmup, concurrency)


def bench_sdk_http(url, calls, rounds, warmup, concurrency=CONCURRENCY, era="handshake"):
    """Sequential and concurrent echo round trips through the SDK's Streamable HTTP client, in ``era``."""
    import asyncio

    return asyncio.run(_bench_sdk_http_async(url, calls, rounds, warmup, concurrency, era))


# --------------------------------------------------------------------------
# server capacity: a load generator firing bare tools/call POSTs

WRK_THREADS = 2


def wrk_script(era="handshake"):
    """The Lua script that makes ``wrk`` POST the bare tools/call of ``era``."""
    body, headers = BARE_POSTS[era]
    lines = ['wrk.method = "POST"', f"wrk.body = '{body}'"]
    lines += [f'wrk.headers["{name}"] = "{value}"' for name, value in headers.items()]
    return "\n".join(lines) + "\n"


def _wrk_path():
    import shutil

    return shutil.which("wrk")


def run_wrk(url, duration, script_path, connections=CONCURRENCY, threads=WRK_THREADS):
    """One ``wrk`` run; requests/s and the error counts it printed."""
    import re
    import subprocess

    cmd = [
        _wrk_path(),
        f"-t{threads}",
        f"-c{connections}",
        f"-d{duration}s",
        "--timeout",
        "10s",
        "-s",
        script_path,
        url,
    ]
    proc = subprocess.run(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=duration + 60,
        check=False,
    )
    out = proc.stdout
    match = re.search(r"Requests/sec:\s*([0-9.]+)", out)
    if proc.returncode != 0 or not match:
        raise RuntimeError(f"wrk failed (status {proc.returncode}): {out.strip()[-500:]}")
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    total = re.search(r"(\d+) requests in", out)
    return {
        "rps": float(match.group(1)),
        "requests": int(total.group(1)) if total else None,
        "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
        "socket_errors": sum(int(g) for g in sock.groups()) if sock else 0,
    }


def run_python_load(url, duration, connections=CONCURRENCY, era="handshake"):
    """The fallback load generator: ``connections`` threads, one keep-alive connection each.

    Each POSTs the bare tools/call of ``era`` (``BARE_POSTS``).  It shares one
    GIL in this process, so it saturates sooner than wrk: its figures are a
    floor of the servers' capacity.
    """
    import http.client
    import threading
    import time
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    body, headers = BARE_POSTS[era]
    body = body.encode()
    counts = [[0, 0] for _ in range(connections)]  # [ok, failed] per thread
    start = threading.Barrier(connections + 1)
    stop_at = [0.0]

    def worker(slot):
        conn = None
        start.wait()
        deadline = stop_at[0]
        while time.perf_counter() < deadline:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
                conn.request("POST", parts.path, body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                counts[slot][0 if response.status == 200 else 1] += 1
                if response.will_close:
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException):
                counts[slot][1] += 1
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(connections)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    stop_at[0] = t0 + duration
    start.wait()
    for t in threads:
        t.join(duration + 30)
    elapsed = time.perf_counter() - t0
    ok = sum(c[0] for c in counts)
    failed = sum(c[1] for c in counts)
    return {"rps": ok / elapsed, "requests": ok + failed, "non_2xx": failed, "socket_errors": 0}


def process_cpu_seconds(pid):
    """The CPU time (user + system, seconds) process ``pid`` has used so far; None where
    ``/proc`` cannot tell (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def bench_capacity(targets, runs, duration, generator, warmup_duration=1):
    """Requests/s of each target in ``targets`` (``{key: (url, era, pid)}``) under the load generator.

    ``era`` picks the bare POST (``BARE_POSTS``).  ``generator``: ``"wrk"`` or
    ``"python"``.  One untimed warm-up run each, then ``runs`` timed runs, the
    targets taking turns so that slow drifts of the machine spread over all of
    them.  With the server's ``pid`` (None: not measured), each run also gives
    the CPU time the server process spent per request served (``cpu_us``): the
    cost of serving one request, apart from the load generator, which shares
    the machine's CPUs and so weighs on capacity too.
    """
    import tempfile

    scripts = {}  # era -> the wrk script's path

    def one(url, era, seconds):
        if generator == "wrk":
            if era not in scripts:
                fd, scripts[era] = tempfile.mkstemp(
                    prefix=f"mcp_ref_bench_wrk_{era}_", suffix=".lua"
                )
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(wrk_script(era))
            return run_wrk(url, seconds, scripts[era])
        return run_python_load(url, seconds, era=era)

    results = {
        key: {"runs": [], "cpu_us_runs": [], "non_2xx": 0, "socket_errors": 0} for key in targets
    }
    try:
        if warmup_duration:
            for url, era, _ in targets.values():
                one(url, era, warmup_duration)
        for _ in range(runs):
            for key, (url, era, pid) in targets.items():
                before = None if pid is None else process_cpu_seconds(pid)
                r = one(url, era, duration)
                after = None if pid is None else process_cpu_seconds(pid)
                results[key]["runs"].append(r["rps"])
                if before is not None and after is not None and r.get("requests"):
                    results[key]["cpu_us_runs"].append((after - before) / r["requests"] * 1e6)
                results[key]["non_2xx"] += r["non_2xx"]
                results[key]["socket_errors"] += r["socket_errors"]
    finally:
        for path in scripts.values():
            os.unlink(path)
    for r in results.values():
        r["median"] = _median(r["runs"])
        r["cpu_us"] = _median(r["cpu_us_runs"]) if len(r["cpu_us_runs"]) == runs else None
    return results


# --------------------------------------------------------------------------
# report


def _fmt(value, unit):
    if value is None:
        return "n/a"
    if unit == "ms":
        return f"{value:.1f} ms"
    if unit == "us":
        return f"{value:.1f}"
    return f"{value:,.0f}/s"


def _fmt_ratio(ratio):
    if ratio is None:
        return "n/a"
    return f"{ratio:.3f}x" if abs(ratio) < 0.1 else f"{ratio:.2f}x"


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def _stdio_key(era, name):
    """The figure key of a stdio echo figure ``name`` (``sequential``, ``concurrent``) in ``era``."""
    return name if era == "handshake" else f"{era}_{name}"


def _http_key(era, name):
    """The figure key of an HTTP figure ``name`` (``sequential``, ``concurrent``, ``capacity``) in ``era``."""
    return ("http_" if era == "handshake" else f"http_{era}_") + name


def _print_rows(head, lines, out):
    """Print ``head`` and ``lines`` (tuples of strings) aligned: the first column left, the last free."""
    widths = [max(len(r[i]) for r in [head] + lines) for i in range(len(head))]
    last = len(head) - 1

    def fmt_row(r):
        cells = (
            [r[0].ljust(widths[0])] + [r[i].rjust(widths[i]) for i in range(1, last)] + [r[last]]
        )
        return "  ".join(cells).rstrip()

    print(fmt_row(head), file=out)
    print("  ".join("-" * w for w in widths[:last]), file=out)
    for r in lines:
        print(fmt_row(r), file=out)


def print_table(figures, out=sys.stdout):
    """Print the figures as one table: a row per figure, mcp_ref, the SDK, and their ratio.

    Rows with no figure on either side (not measured in this run) are left out.
    """
    load = figures.get("settings", {}).get("load_generator_label", "load")
    rows = [
        ("import package, wall (-c diff)", "import", "ms", "lower is better"),
        ("import package, -X importtime", "import_importtime", "ms", "lower is better"),
        ("import client, wall (-c diff)", "import_client", "ms", "lower is better"),
        ("import client, -X importtime", "import_client_importtime", "ms", "lower is better"),
        ("import client + server, wall (-c diff)", "import_both", "ms", "lower is better"),
    ]
    for prefix, key_of in (("echo calls", _stdio_key), ("HTTP echo calls", _http_key)):
        for era in HTTP_ERAS:
            rows += [
                (
                    f"{prefix}, {ERA_LABELS[era]}, sequential",
                    key_of(era, "sequential"),
                    "calls/s",
                    "higher is better",
                ),
                (
                    f"{prefix}, {ERA_LABELS[era]}, {CONCURRENCY} concurrent",
                    key_of(era, "concurrent"),
                    "calls/s",
                    "higher is better",
                ),
            ]
    for era in HTTP_ERAS:
        rows.append(
            (
                f"HTTP server capacity, {ERA_LABELS[era]} ({load})",
                _http_key(era, "capacity"),
                "req/s",
                "higher is better",
            )
        )
    rows = [
        r for r in rows if any(figures[side].get(r[1]) is not None for side in ("mcp_ref", "sdk"))
    ]
    head = ("figure", "mcp_ref", "SDK (mcp)", "mcp_ref/SDK", "")
    lines = []
    for label, key, unit, sense in rows:
        ref = figures["mcp_ref"].get(key)
        sdk = figures["sdk"].get(key)
        ratio = figures["ratios"].get(key)
        lines.append((label, _fmt(ref, unit), _fmt(sdk, unit), _fmt_ratio(ratio), sense))
    _print_rows(head, lines, out)


def era_ratios(figures):
    """``{side: {figure: 2026-07-28 / handshake}}`` for the HTTP figures measured in both eras.

    Capacity runs take turns (one run of each server, then the next round), so its ratio is the
    median of the rounds' own ratios: each pair ran under the same load from the rest of the
    machine, which the ratio of two medians would not cancel out.
    """
    ratios = {}
    for side in ("mcp_ref", "sdk"):
        ratios[side] = {
            _http_key("handshake", name): _ratio(
                figures[side].get(_http_key("modern", name)),
                figures[side].get(_http_key("handshake", name)),
            )
            for name in ("sequential", "concurrent", "capacity")
        }
        modern_runs = figures[side].get(_http_key("modern", "capacity") + "_runs") or []
        handshake_runs = figures[side].get(_http_key("handshake", "capacity") + "_runs") or []
        if modern_runs and len(modern_runs) == len(handshake_runs) and all(handshake_runs):
            ratios[side][_http_key("handshake", "capacity")] = _median(
                [m / h for m, h in zip(modern_runs, handshake_runs, strict=True)]
            )
        # Serving speed, from the server's CPU time per request: handshake / 2026-07-28, so that
        # above 1 still means 2026-07-28 is faster.  Paired as capacity is.
        modern_cpu = figures[side].get(_http_key("modern", "cpu_us") + "_runs") or []
        handshake_cpu = figures[side].get(_http_key("handshake", "cpu_us") + "_runs") or []
        ratios[side]["http_cpu_us"] = (
            _median([h / m for m, h in zip(modern_cpu, handshake_cpu, strict=True)])
            if modern_cpu and len(modern_cpu) == len(handshake_cpu) and all(modern_cpu)
            else None
        )
    return ratios


def print_era_table(figures, out=sys.stdout):
    """Print the HTTP figures of the two eras side by side: 2026-07-28 / handshake, per implementation.

    Above 1: the stateless 2026-07-28 revision is served faster than the handshake era's
    stateless mode.  Nothing is printed when no HTTP figure was measured in both eras.
    """
    load = figures.get("settings", {}).get("load_generator_label", "load")
    rows = [
        ("HTTP echo calls, sequential", "http_sequential"),
        (f"HTTP echo calls, {CONCURRENCY} concurrent", "http_concurrent"),
        (f"HTTP server capacity ({load}, paired runs)", "http_capacity"),
        ("HTTP serving speed (1 / server CPU per request, paired runs)", "http_cpu_us"),
    ]
    ratios = figures.get("era_ratios", {})
    lines = []
    for label, key in rows:
        ref = ratios.get("mcp_ref", {}).get(key)
        sdk = ratios.get("sdk", {}).get(key)
        if ref is None and sdk is None:
            continue
        lines.append((label, _fmt_ratio(ref), _fmt_ratio(sdk), "higher: 2026-07-28 faster"))
    if lines:
        _print_rows(("2026-07-28 / handshake", "mcp_ref", "SDK (mcp)", ""), lines, out)


def run_http_benchmarks(ns, figures, sdk_ok, note):
    """The Streamable HTTP figures; False if an mcp_ref measurement failed."""
    import contextlib

    ok = True
    settings = figures["settings"]
    generator = ns.load_generator
    if generator == "auto":
        generator = "wrk" if _wrk_path() else "python"
    if generator == "wrk":
        label = f"wrk -t{WRK_THREADS} -c{CONCURRENCY}"
    else:
        label = f"python load, {CONCURRENCY} conns"
        if ns.load_generator == "auto":
            msg = "wrk not on PATH: server capacity measured with the Python load generator (a floor, GIL-bound)"
            figures["notes"].append(msg)
            note("note: " + msg)
    settings.update(
        http_calls=ns.http_calls,
        http_rounds=ns.http_rounds,
        http_stateful_clients=ns.http_stateful,
        load_generator=generator,
        load_generator_label=label,
        load_duration_s=ns.load_duration,
        load_runs=ns.load_runs,
    )

    def fail(side, what, exc):
        nonlocal ok
        who = "mcp_ref" if side == "mcp_ref" else "SDK"
        msg = f"{who} {what} failed: {type(exc).__name__}: {exc}"
        figures["notes"].append(msg)
        note("note: " + msg)
        if side == "mcp_ref":
            ok = False

    sides = []
    if not ns.skip_mcp_ref:
        sides.append(
            ("mcp_ref", MCP_REF_HTTP_SERVER, "mcp_ref Server.run_http", bench_mcp_ref_http)
        )
    if sdk_ok:
        sides.append(("sdk", SDK_HTTP_SERVER, "SDK MCPServer under uvicorn", bench_sdk_http))

    with contextlib.ExitStack() as stack:
        # stateless servers: for the capacity runs, and for the clients unless --http-stateful
        stateless = {}
        for side, script, name, _ in sides:
            try:
                server = stack.enter_context(
                    HttpServerProcess(name + " (stateless)", script, ["1"])
                )
                check_bare_tools_call(server)
                stateless[side] = server
            except Exception as exc:
                fail(side, "HTTP server (stateless)", exc)

        # client-driven round trips: the handshake era, then 2026-07-28, against the same server
        for side, script, name, bench in sides:
            try:
                if ns.http_stateful:
                    server = stack.enter_context(
                        HttpServerProcess(name + " (sessions)", script, ["0"])
                    )
                elif side in stateless:
                    server = stateless[side]
                else:
                    continue
            except Exception as exc:
                fail(side, "HTTP server (sessions)", exc)
                continue
            for era in HTTP_ERAS:
                try:
                    r = bench(server.url, ns.http_calls, ns.http_rounds, ns.warmup, era=era)
                    server.check_alive()
                except Exception as exc:
                    fail(side, f"HTTP round trips ({ERA_LABELS[era]})", exc)
                    continue
                for key in ("sequential", "concurrent"):
                    figures[side][_http_key(era, key)] = r[key]["median"]
                    figures[side][_http_key(era, key) + "_rounds"] = r[key]["rounds"]
                who = "mcp_ref" if side == "mcp_ref" else "SDK"
                callers = "threads" if side == "mcp_ref" else "asyncio tasks"
                note(
                    f"{who} HTTP echo, {ERA_LABELS[era]}: {_fmt(r['sequential']['median'], '/s')}"
                    f" sequential, {_fmt(r['concurrent']['median'], '/s')} with {CONCURRENCY} {callers}"
                )

        # server capacity: each stateless server under the bare POSTs of both eras
        targets = {}
        for side, server in stateless.items():
            for era in HTTP_ERAS:
                try:
                    if era != "handshake":  # the handshake POST was checked when the server started
                        check_bare_tools_call(server, era)
                    targets[(side, era)] = (server.url, era, server.proc.pid)
                except Exception as exc:
                    fail(side, f"bare {ERA_LABELS[era]} tools/call POST", exc)
        if targets:
            try:
                baseline = stack.enter_context(
                    HttpServerProcess(
                        "stdlib ThreadingHTTPServer (canned JSON)", BASELINE_HTTP_SERVER
                    )
                )
                check_bare_tools_call(baseline)
                targets[("baseline", "handshake")] = (baseline.url, "handshake", baseline.proc.pid)
            except Exception as exc:
                msg = f"stdlib baseline server failed: {type(exc).__name__}: {exc}"
                figures["notes"].append(msg)
                note("note: " + msg)
            note(
                f"server capacity: {label}, {ns.load_duration} s x {ns.load_runs} runs per server"
                " (+1 s warm-up), servers taking turns ..."
            )
            try:
                results = bench_capacity(targets, ns.load_runs, ns.load_duration, generator)
            except Exception as exc:
                fail(
                    "mcp_ref" if any(side == "mcp_ref" for side, _ in targets) else "sdk",
                    "server capacity run",
                    exc,
                )
                results = {}
            for (side, era), r in results.items():
                key = _http_key(era, "capacity")
                what = side if side == "baseline" else f"{side}, {ERA_LABELS[era]}"
                figures.setdefault(side, {})
                figures[side][key] = r["median"]
                figures[side][key + "_runs"] = r["runs"]
                figures[side][key + "_errors"] = r["non_2xx"] + r["socket_errors"]
                figures[side][_http_key(era, "cpu_us")] = r["cpu_us"]
                figures[side][_http_key(era, "cpu_us") + "_runs"] = r["cpu_us_runs"]
                if r["non_2xx"] or r["socket_errors"]:
                    msg = (
                        f"{what} under load: {r['non_2xx']} non-2xx answers,"
                        f" {r['socket_errors']} socket errors (figure suspect)"
                    )
                    figures["notes"].append(msg)
                    note("note: " + msg)
                cpu = ""
                if r["cpu_us"] is not None:
                    cpu_runs = ", ".join(f"{x:.0f}" for x in r["cpu_us_runs"])
                    cpu = f"; server CPU {r['cpu_us']:.0f} us/request (runs: {cpu_runs})"
                runs = ", ".join(f"{x:.0f}" for x in r["runs"])
                note(f"  {what}: {_fmt(r['median'], '/s')} (runs: {runs}){cpu}")
            for side in stateless.values():
                try:
                    side.check_alive()
                except RuntimeError as exc:
                    msg = f"after the load: {exc}"
                    figures["notes"].append(msg)
                    note("note: " + msg)
    return ok


def print_http_notes(figures, ns, out=sys.stdout):
    """Print how the HTTP rows were measured, and the stdlib baseline next to mcp_ref's capacity."""
    settings = figures["settings"]
    servers = "with sessions" if ns.http_stateful else "stateless"
    print(
        "HTTP echo calls: tools/call over Streamable HTTP (JSON replies, keep-alive), each server in its own"
        f" process, {servers}; mcp_ref Client.http with {CONCURRENCY} threads, the SDK's streamable_http_client"
        f" + ClientSession with {CONCURRENCY} asyncio tasks; median of {ns.http_rounds} rounds of"
        f' {ns.http_calls} calls.  Handshake: Client.http(era="handshake") / the SDK\'s'
        ' initialize(), then each call a POST at 2025-11-25; 2026-07-28: Client.http(era="modern") / the SDK\'s'
        " discover(), then each call a POST with its _meta envelope and Mcp-Method/Mcp-Name headers, same server.",
        file=out,
    )
    if settings.get("load_generator") == "wrk":
        how = f"wrk -t{WRK_THREADS} -c{CONCURRENCY} -d{ns.load_duration}s"
    else:
        how = f"the Python load generator ({CONCURRENCY} threads, keep-alive http.client; wrk not used)"
    print(
        f"HTTP server capacity: bare tools/call POSTs (no session; stateless servers, JSON replies) from {how},"
        f" median of {ns.load_runs} runs; the handshake era's POST (MCP-Protocol-Version: {HTTP_PROTOCOL_VERSION})"
        " and 2026-07-28's (its _meta envelope; MCP-Protocol-Version, Mcp-Method, Mcp-Name headers) to the same"
        " server, the runs interleaved.",
        file=out,
    )
    base = figures.get("baseline", {}).get("http_capacity")
    if base:
        reached = []
        for era in HTTP_ERAS:
            ref = figures["mcp_ref"].get(_http_key(era, "capacity"))
            if ref:
                reached.append(f"{100.0 * ref / base:.0f}% ({ERA_LABELS[era]})")
        print(
            f"  stdlib ThreadingHTTPServer answering canned JSON, same load: {_fmt(base, '/s')};"
            f" mcp_ref reaches {', '.join(reached) or 'n/a'} of it.",
            file=out,
        )
    ratio = figures["ratios"].get("http_capacity")
    if ratio is not None:
        verdict = "met" if ratio >= 3 else "NOT met"
        print(
            f"  target (issue 3 section 6): mcp_ref capacity >= 3x the SDK's: {verdict} ({_fmt_ratio(ratio)}).",
            file=out,
        )
    cpu = {era: figures["mcp_ref"].get(_http_key(era, "cpu_us")) for era in HTTP_ERAS}
    if all(cpu.values()):
        per_era = ", ".join(f"{cpu[era]:.0f} us ({ERA_LABELS[era]})" for era in HTTP_ERAS)
        print(
            f"  mcp_ref server CPU time per request served (user + system, the server process): {per_era}.",
            file=out,
        )
    ratios = figures.get("era_ratios", {}).get("mcp_ref", {})
    ratio = ratios.get("http_capacity")
    if ratio is not None:
        verdict = "met" if ratio >= 1 else "NOT met"
        print(
            "  target (issue 10): mcp_ref's stateless 2026-07-28 serving at least as fast as its handshake-era"
            " stateless mode (server capacity, 2026-07-28 / handshake, median of paired runs >= 1):"
            f" {verdict} ({_fmt_ratio(ratio)}).",
            file=out,
        )


def _parse_args(argv):
    import argparse

    p = argparse.ArgumentParser(
        prog="python benchmarks/bench.py",
        description="Print import-time figures, and tools/call throughput over stdio and Streamable HTTP,"
        " for mcp_ref and the official SDK.",
    )
    p.add_argument(
        "--quick", action="store_true", help="few calls and rounds: a smoke test, not a measurement"
    )
    p.add_argument(
        "--calls", type=int, default=None, help="calls per round (default 2000; 200 with --quick)"
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="timed rounds per figure (default 5; 2 with --quick)",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="untimed calls first (default 200; 20 with --quick)",
    )
    p.add_argument(
        "--import-reps",
        type=int,
        default=None,
        help="subprocess pairs per import figure (default 15; 3 with --quick)",
    )
    p.add_argument("--json", action="store_true", help="also print all figures as one JSON object")
    p.add_argument("--skip-mcp-ref", action="store_true", help="do not measure mcp_ref")
    p.add_argument("--skip-sdk", action="store_true", help="do not measure the official SDK")
    p.add_argument("--skip-http", action="store_true", help="do not measure anything over HTTP")
    p.add_argument(
        "--http-only",
        action="store_true",
        help="measure only the HTTP figures of both eras (no import time, no stdio round trips, no shared state)",
    )
    p.add_argument(
        "--state-only",
        action="store_true",
        help="measure only the shared-state rows: a rate-limited tools/call in memory vs on Redis, and a change's"
        " delay to a listener on another worker (needs redis-server and redis-py)",
    )
    p.add_argument("--skip-state", action="store_true", help="do not measure the shared-state rows")
    p.add_argument(
        "--state-server",
        choices=("auto", "gunicorn", "stdlib"),
        default="auto",
        help="what serves the shared-state deployments: gunicorn -w 1 -k gthread (auto: when installed) or"
        " mcp_ref's standard-library server",
    )
    p.add_argument(
        "--state-calls",
        type=int,
        default=None,
        help="calls per round of the shared-state rows (default 2000; 100 with --quick)",
    )
    p.add_argument(
        "--state-changes",
        type=int,
        default=None,
        help="changes timed for the change -> listener delay (default 100; 5 with --quick)",
    )
    p.add_argument(
        "--http-calls",
        type=int,
        default=None,
        help="calls per round over HTTP (default 1000; 100 with --quick)",
    )
    p.add_argument(
        "--http-rounds",
        type=int,
        default=None,
        help="timed rounds per HTTP figure (default: --rounds)",
    )
    p.add_argument(
        "--http-stateful",
        action="store_true",
        help="client-driven HTTP figures against servers with sessions (default: stateless servers, as for capacity)",
    )
    p.add_argument(
        "--load-generator",
        choices=("auto", "wrk", "python"),
        default="auto",
        help="server capacity load: wrk (auto: when on PATH) or the Python fallback",
    )
    p.add_argument(
        "--load-duration",
        type=int,
        default=None,
        help="seconds per capacity run (default 5; 1 with --quick)",
    )
    p.add_argument(
        "--load-runs",
        type=int,
        default=None,
        help="capacity runs per server (default 5; 1 with --quick)",
    )
    p.add_argument(
        "--against",
        metavar="REV",
        default=None,
        help="compare this checkout's work tree with git revision REV (exported with git archive, no git state"
        " changes), alternated in one run: stdio pinned and unpinned per era, the HTTP client, HTTP server capacity,"
        " import time; prints medians and HEAD/REV (see bench_against.py)",
    )
    p.add_argument(
        "--pairs",
        type=int,
        default=None,
        help="with --against: alternated HEAD/REV processes per client figure (default 5; 1 with --quick)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="abort the whole run (with tracebacks) after this many seconds (default 1800)",
    )
    ns = p.parse_args(argv)
    quick = ns.quick
    if ns.calls is None:
        ns.calls = 200 if quick else 2000
    if ns.rounds is None:
        ns.rounds = 2 if quick else 5
    if ns.warmup is None:
        ns.warmup = 20 if quick else 200
    if ns.import_reps is None:
        ns.import_reps = 3 if quick else 15
    if ns.http_calls is None:
        ns.http_calls = 100 if quick else 1000
    if ns.http_rounds is None:
        ns.http_rounds = ns.rounds
    if ns.load_duration is None:
        ns.load_duration = 1 if quick else 5
    if ns.load_runs is None:
        ns.load_runs = 1 if quick else 5
    if ns.state_calls is None:
        ns.state_calls = 100 if quick else 2000
    if ns.state_changes is None:
        ns.state_changes = 5 if quick else 100
    if ns.pairs is None:
        ns.pairs = 1 if quick else 5
    if ns.against is not None and (ns.state_only or ns.http_only):
        p.error("--against excludes --state-only and --http-only")
    if ns.against is not None and not ns.against.strip():
        p.error("--against needs a revision")
    if ns.state_only and (ns.http_only or ns.skip_http or ns.skip_state or ns.skip_mcp_ref):
        p.error("--state-only excludes --http-only, --skip-http, --skip-state and --skip-mcp-ref")
    if ns.http_only and ns.skip_http:
        p.error("--http-only and --skip-http exclude each other")
    if ns.state_server == "gunicorn" and not _module_available("gunicorn"):
        p.error("--state-server gunicorn: gunicorn is not installed")
    if ns.load_generator == "wrk" and _wrk_path() is None:
        p.error("--load-generator wrk: wrk is not on PATH")
    for name in (
        "calls",
        "rounds",
        "pairs",
        "import_reps",
        "http_calls",
        "http_rounds",
        "load_duration",
        "load_runs",
        "state_calls",
        "state_changes",
    ):
        if getattr(ns, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if ns.warmup < 0:
        p.error("--warmup must not be negative")
    return ns


def main(argv=None):
    """Run the benchmark with the command line ``argv``; print the figures; return the exit status."""
    ns = _parse_args(sys.argv[1:] if argv is None else argv)

    import faulthandler
    import json
    import platform

    # Measure this checkout's mcp_ref in this process too, as in the child processes.
    root = _repo_root()
    if os.path.isfile(os.path.join(root, "mcp_ref", "__init__.py")) and root not in sys.path:
        sys.path.insert(0, root)

    if ns.timeout and ns.timeout > 0:
        faulthandler.dump_traceback_later(ns.timeout, exit=True)
    # state_bench.py uses this module's helpers as ``bench``: run as a script, this module is
    # ``__main__``, and must not be imported a second time under its own name.
    sys.modules.setdefault("bench", sys.modules[__name__])
    if ns.against is not None:
        import bench_against

        print(
            f"benchmarks/bench.py --against {ns.against}: Python {sys.version.split()[0]},"
            f" {os.cpu_count()} CPUs; {ns.pairs} pairs; stdio {ns.calls} calls x {ns.rounds} rounds"
            f" (+{ns.warmup} warm-up); HTTP {ns.http_calls} calls x {ns.http_rounds} rounds;"
            f" capacity {ns.load_duration} s x {ns.load_runs} runs; {ns.import_reps} import pairs",
            flush=True,
        )
        try:
            _, ok = bench_against.run_against(ns, lambda msg: print(msg, flush=True))
        except bench_against.ExportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        faulthandler.cancel_dump_traceback_later()
        if ns.quick:
            print("--quick: smoke-test sizes; these figures are not a measurement.")
        return 0 if ok else 1
    run_state = not (ns.skip_state or ns.skip_http or ns.http_only or ns.skip_mcp_ref)
    others = not ns.state_only  # the import, stdio and HTTP-era rows

    def note(msg):
        print(msg, flush=True)

    figures = {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "settings": {
            "calls": ns.calls,
            "rounds": ns.rounds,
            "warmup": ns.warmup,
            "import_reps": ns.import_reps,
            "concurrency": CONCURRENCY,
            "quick": ns.quick,
            "http": not ns.skip_http and others,
            "http_only": ns.http_only,
            "state": run_state,
            "state_only": ns.state_only,
        },
        "mcp_ref": {},
        "sdk": {},
        "ratios": {},
        "notes": [],
    }

    if others:
        sizes = (
            f"{ns.calls} calls x {ns.rounds} rounds (+{ns.warmup} warm-up),"
            f" {ns.import_reps} import pairs"
        )
    else:
        sizes = (
            f"shared-state rows only: {ns.state_calls} calls x {ns.rounds} rounds"
            f" (+{ns.warmup} warm-up), {ns.state_changes} changes"
        )
    note(
        f"benchmarks/bench.py: Python {figures['python']} on {figures['platform']},"
        f" {figures['cpus']} CPUs; {sizes}"
    )

    failed = False  # an mcp_ref measurement failed: exit status 1 (SDK trouble is only noted)
    sdk_ok = not ns.skip_sdk and others and _module_available("mcp")
    if not ns.skip_sdk and others and not sdk_ok:
        msg = "official SDK not installed (pip install mcp): SDK figures skipped"
        figures["notes"].append(msg)
        note("note: " + msg)
    if sdk_ok:
        try:
            from importlib.metadata import version

            figures["sdk"]["version"] = version("mcp")
        except Exception:
            pass

    # import time: the bare package, then what a client needs
    import_cases = []
    if not ns.skip_mcp_ref and not ns.http_only and others:
        import_cases += [
            ("mcp_ref", "import", "import mcp_ref"),
            ("mcp_ref", "import_client", "from mcp_ref import Client"),
            ("mcp_ref", "import_both", "from mcp_ref import Client, Server"),
        ]
    if sdk_ok and not ns.http_only:
        import_cases += [
            ("sdk", "import", "import mcp"),
            (
                "sdk",
                "import_client",
                "from mcp import ClientSession; from mcp.client.stdio import stdio_client",
            ),
            ("sdk", "import_both", SDK_CLIENT_AND_SERVER),
        ]
    for side, key, statement in import_cases:
        try:
            r = measure_import_ms(statement, ns.import_reps)
        except Exception as exc:
            msg = f"{statement!r} failed: {exc}"
            figures["notes"].append(msg)
            note("note: " + msg)
            if side == "mcp_ref":
                failed = True
            continue
        figures[side][key] = r["median_ms"]
        figures[side][key + "_samples_ms"] = r["samples_ms"]
        figures[side][key + "_importtime"] = r["importtime_median_ms"]
        figures[side][key + "_importtime_samples_ms"] = r["importtime_samples_ms"]
        figures[side][key + "_statement"] = statement
        note(
            f"{statement}: {_fmt(r['median_ms'], 'ms')} wall,"
            f" {_fmt(r['importtime_median_ms'], 'ms')} by -X importtime"
        )

    # round trips
    if not ns.skip_mcp_ref and not ns.http_only and others:
        try:
            r = figures["mcp_ref"]["stdio"] = bench_mcp_ref_stdio_eras(
                ns.calls, ns.rounds, ns.warmup
            )
            for era in HTTP_ERAS:
                modes = "; ".join(
                    f"{STDIO_MODE_LABELS[mode]} {_fmt(r[era][mode]['rate'], '/s')} (CPU per call:"
                    f" client {_fmt(r[era][mode]['client_us'], 'us')}"
                    f" + server {_fmt(r[era][mode]['server_us'], 'us')} us)"
                    for mode, _, _ in STDIO_MODES
                )
                note(f"mcp_ref stdio echo, {ERA_LABELS[era]}: {modes}")
        except Exception as exc:
            msg = f"mcp_ref stdio figures per era failed: {type(exc).__name__}: {exc}"
            figures["notes"].append(msg)
            failed = True
            note("note: " + msg)
    # the echo round trips, each era of each implementation against its own server
    echo_sides = []
    if not ns.skip_mcp_ref and not ns.http_only and others:
        echo_sides.append(("mcp_ref", bench_mcp_ref, "threads"))
    if sdk_ok and not ns.http_only:
        echo_sides.append(("sdk", bench_sdk, "asyncio tasks"))
    for side, bench, callers in echo_sides:
        name = "mcp_ref" if side == "mcp_ref" else "SDK"
        for era in HTTP_ERAS:
            try:
                r = bench(ns.calls, ns.rounds, ns.warmup, era=era)
            except Exception as exc:
                msg = f"{name} round trips ({ERA_LABELS[era]}) failed: {type(exc).__name__}: {exc}"
                figures["notes"].append(msg)
                failed = failed or side == "mcp_ref"  # SDK trouble is only noted
                note("note: " + msg)
                continue
            for key in ("sequential", "concurrent"):
                figures[side][_stdio_key(era, key)] = r[key]["median"]
                figures[side][_stdio_key(era, key) + "_rounds"] = r[key]["rounds"]
            note(
                f"{name} echo, {ERA_LABELS[era]}: {_fmt(r['sequential']['median'], '/s')} sequential,"
                f" {_fmt(r['concurrent']['median'], '/s')} with {CONCURRENCY} {callers}"
            )

    if not ns.skip_http and others and not run_http_benchmarks(ns, figures, sdk_ok, note):
        failed = True

    state_bench = None
    if run_state:
        import state_bench

        if not state_bench.run_state_benchmarks(ns, figures, note):
            failed = True

    for key in (
        "import",
        "import_importtime",
        "import_client",
        "import_client_importtime",
        "import_both",
    ):
        figures["ratios"][key] = _ratio(figures["mcp_ref"].get(key), figures["sdk"].get(key))
    for key in tuple(
        _stdio_key(era, name) for era in HTTP_ERAS for name in ("sequential", "concurrent")
    ) + tuple(
        _http_key(era, name)
        for era in HTTP_ERAS
        for name in ("sequential", "concurrent", "capacity")
    ):
        figures["ratios"][key] = _ratio(figures["mcp_ref"].get(key), figures["sdk"].get(key))
    figures["era_ratios"] = era_ratios(figures)

    faulthandler.cancel_dump_traceback_later()

    print()
    if others:
        print_table(figures)
    if figures["mcp_ref"].get("stdio"):
        print()
        print_stdio_era_table(figures)
    if (
        not ns.skip_http
        and others
        and any(v is not None for side in figures["era_ratios"].values() for v in side.values())
    ):
        print()
        print_era_table(figures)
    if state_bench is not None and figures.get("state", {}).get("redis"):
        if others:
            print()
        state_bench.print_state_table(figures)
    print()
    if others and not ns.http_only:
        print_stdio_notes(figures, ns)
    else:
        print(
            f"On a {figures['cpus']}-CPU machine; expect run-to-run noise of 10% or more,"
            " so compare figures from the same run only."
        )
    if not ns.skip_http and others:
        print_http_notes(figures, ns)
    if state_bench is not None:
        state_bench.print_state_notes(figures)
    if ns.quick:
        print("--quick: smoke-test sizes; these figures are not a measurement.")
    if ns.json:
        print(json.dumps(figures, sort_keys=True))
    return 1 if failed else 0


def print_stdio_notes(figures, ns, out=sys.stdout):
    """Print how the import-time and stdio rows were measured."""
    print(
        "import package: `import mcp_ref` / `import mcp`; import client: `from mcp_ref import Client` /"
        " `from mcp import ClientSession` + stdio_client; import client + server: `from mcp_ref import Client, Server` /"
        " `from mcp import ClientSession` + the SDK's server class (warm, bytecode cached;"
        f" median of {ns.import_reps}).",
        file=out,
    )
    print(
        "echo calls: tools/call over stdio to a server of the same implementation, in each era;"
        f" mcp_ref with {CONCURRENCY} threads on one Client, the SDK with {CONCURRENCY} asyncio tasks"
        ' on one ClientSession. Handshake: Client.stdio(era="handshake") / the SDK\'s initialize();'
        ' 2026-07-28: Client.stdio(era="modern") / the SDK\'s discover(), each call with its _meta envelope.',
        file=out,
    )
    if figures["mcp_ref"].get("stdio"):
        print(
            "mcp_ref stdio per era: benchmarks/servers/mcp_ref_stdio_echo.py, Client.stdio(era=...), each row in a fresh"
            " process (benchmarks/bench_side.py); pinned: client and server restricted to one CPU (sched_setaffinity,"
            " inherited), so the wall time is their CPU time when nothing else runs there; unpinned: as the rows above."
            "  CPU per call: each process's CPU clock (its exited threads included), read around each round.",
            file=out,
        )
    print(
        f"Medians of {ns.rounds} rounds (stdio) on a {figures['cpus']}-CPU machine; expect run-to-run"
        " noise of 10% or more, so compare figures from the same run only.",
        file=out,
    )


if __name__ == "__main__":
    sys.exit(main())
