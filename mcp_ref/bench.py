"""Throughput and import-time figures for mcp_ref, next to the official MCP Python SDK.

Run it as ``python -m mcp_ref.bench``; it prints figures, it is not a test.

What is measured:

* import time of ``mcp_ref`` (and of ``mcp``, the official SDK, when installed),
  warm (bytecode cached): wall time of ``python -c "import X"`` minus
  ``python -c "pass"``, paired in fresh subprocesses, and the cumulative figure
  of ``python -X importtime``; medians over the repetitions;
* ``tools/call`` round trips of an ``echo`` tool over stdio, client and server
  both from the same implementation: one caller doing sequential calls, then
  8 concurrent callers sharing one client (threads for mcp_ref, asyncio tasks
  over one ``ClientSession`` for the SDK); calls/s, median over the rounds.

Options: ``--quick``, ``--calls N``, ``--rounds R``, ``--json``; see ``--help``.
All heavy imports stay inside functions so that importing this module is cheap.
"""

from __future__ import annotations

import sys

CONCURRENCY = 8
ECHO_TEXT = "hi"

# Official SDK server used for the comparison. Written to a temporary file at
# run time (so it needs only the SDK, not mcp_ref, on the child's path), and
# also runnable as ``python -m mcp_ref.bench --sdk-server``.
# The tool is ``async def``: the SDK runs plain ``def`` tools in a worker
# thread, so the coroutine form is its fast path.
SDK_SERVER_SOURCE = '''\
try:  # mcp >= 2
    from mcp.server.mcpserver import MCPServer as _Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _Server

server = _Server("bench-echo")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run()
'''


# --------------------------------------------------------------------------
# small helpers


def _median(values):
    import statistics

    return statistics.median(values) if values else None


def _package_root():
    import os

    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child_env():
    """Environment for child interpreters: mcp_ref importable, no stray flags."""
    import os

    env = dict(os.environ)
    root = _package_root()
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
            cmd_itime, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
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
    return [sys.executable, "-m", "mcp_ref", "serve-demo"]


def bench_mcp_ref(calls, rounds, warmup, concurrency=CONCURRENCY):
    """Sequential and threaded echo round trips through one mcp_ref client."""
    import threading
    import time

    from mcp_ref import Client

    def check(result):
        if result.is_error or result.content[0].text != ECHO_TEXT:
            raise AssertionError("unexpected echo result: %r" % (result,))

    args = {"text": ECHO_TEXT}
    seq_rates = []
    par_rates = []
    with Client.stdio(_mcp_ref_server_cmd()) as client:
        call = client.call_tool
        for _ in range(warmup):
            check(call("echo", args))

        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(calls):
                check(call("echo", args))
            seq_rates.append(calls / (time.perf_counter() - t0))

        shares = [calls // concurrency + (1 if i < calls % concurrency else 0) for i in range(concurrency)]
        for _ in range(rounds):
            start = threading.Barrier(concurrency + 1)
            errors = []

            def worker(n):
                try:
                    start.wait()
                    for _ in range(n):
                        check(call("echo", args))
                except BaseException as exc:  # reported after the join
                    errors.append(exc)

            threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in shares]
            for t in threads:
                t.start()
            start.wait()
            t0 = time.perf_counter()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - t0
            if errors:
                raise errors[0]
            par_rates.append(calls / elapsed)

    return {
        "sequential": {"median": _median(seq_rates), "rounds": seq_rates},
        "concurrent": {"median": _median(par_rates), "rounds": par_rates},
    }


# --------------------------------------------------------------------------
# official SDK over stdio


def _sdk_echo_check(result):
    if getattr(result, "is_error", None) or getattr(result, "isError", None):
        raise AssertionError("SDK echo returned an error: %r" % (result,))
    if result.content[0].text != ECHO_TEXT:
        raise AssertionError("unexpected SDK echo result: %r" % (result,))


async def _bench_sdk_async(server_script, calls, rounds, warmup, concurrency):
    import asyncio
    import os
    import time

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[server_script])
    args = {"text": ECHO_TEXT}
    seq_rates = []
    par_rates = []
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                call = session.call_tool
                for _ in range(warmup):
                    _sdk_echo_check(await call("echo", args))

                for _ in range(rounds):
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        _sdk_echo_check(await call("echo", args))
                    seq_rates.append(calls / (time.perf_counter() - t0))

                shares = [calls // concurrency + (1 if i < calls % concurrency else 0) for i in range(concurrency)]

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


def bench_sdk(calls, rounds, warmup, concurrency=CONCURRENCY):
    """Sequential and concurrent echo round trips through one SDK ClientSession."""
    import asyncio
    import os
    import tempfile

    fd, path = tempfile.mkstemp(prefix="mcp_ref_bench_sdk_server_", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(SDK_SERVER_SOURCE)
        return asyncio.run(_bench_sdk_async(path, calls, rounds, warmup, concurrency))
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def run_sdk_server():
    """Body of ``--sdk-server``: the SDK echo server on stdio."""
    namespace = {"__name__": "__main__"}
    exec(compile(SDK_SERVER_SOURCE, "<mcp_ref.bench sdk server>", "exec"), namespace)


# --------------------------------------------------------------------------
# report


def _fmt(value, unit):
    if value is None:
        return "n/a"
    if unit == "ms":
        return "%.1f ms" % value
    return "{:,.0f}/s".format(value)


def _fmt_ratio(ratio):
    if ratio is None:
        return "n/a"
    return ("%.3fx" if abs(ratio) < 0.1 else "%.2fx") % ratio


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def print_table(figures, out=sys.stdout):
    rows = [
        ("import package, wall (-c diff)", "import", "ms", "lower is better"),
        ("import package, -X importtime", "import_importtime", "ms", "lower is better"),
        ("import client, wall (-c diff)", "import_client", "ms", "lower is better"),
        ("import client, -X importtime", "import_client_importtime", "ms", "lower is better"),
        ("echo calls, sequential", "sequential", "calls/s", "higher is better"),
        ("echo calls, %d concurrent" % CONCURRENCY, "concurrent", "calls/s", "higher is better"),
    ]
    head = ("figure", "mcp_ref", "SDK (mcp)", "mcp_ref/SDK", "")
    lines = []
    for label, key, unit, sense in rows:
        ref = figures["mcp_ref"].get(key)
        sdk = figures["sdk"].get(key)
        ratio = figures["ratios"].get(key)
        lines.append((label, _fmt(ref, unit), _fmt(sdk, unit), _fmt_ratio(ratio), sense))
    widths = [max(len(r[i]) for r in [head] + lines) for i in range(len(head))]

    def fmt_row(r):
        cells = [r[0].ljust(widths[0])] + [r[i].rjust(widths[i]) for i in (1, 2, 3)] + [r[4]]
        return "  ".join(cells).rstrip()

    print(fmt_row(head), file=out)
    print("  ".join("-" * w for w in widths[:4]), file=out)
    for r in lines:
        print(fmt_row(r), file=out)


def _parse_args(argv):
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m mcp_ref.bench",
        description="Print import-time and stdio tools/call throughput figures for mcp_ref and the official SDK.",
    )
    p.add_argument("--quick", action="store_true", help="few calls and rounds: a smoke test, not a measurement")
    p.add_argument("--calls", type=int, default=None, help="calls per round (default 2000; 200 with --quick)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per figure (default 5; 2 with --quick)")
    p.add_argument("--warmup", type=int, default=None, help="untimed calls first (default 200; 20 with --quick)")
    p.add_argument(
        "--import-reps", type=int, default=None, help="subprocess pairs per import figure (default 15; 3 with --quick)"
    )
    p.add_argument("--json", action="store_true", help="also print all figures as one JSON object")
    p.add_argument("--skip-mcp-ref", action="store_true", help="do not measure mcp_ref")
    p.add_argument("--skip-sdk", action="store_true", help="do not measure the official SDK")
    p.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="abort the whole run (with tracebacks) after this many seconds (default 1800)",
    )
    p.add_argument("--sdk-server", action="store_true", help=argparse.SUPPRESS)
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
    for name in ("calls", "rounds", "import_reps"):
        if getattr(ns, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if ns.warmup < 0:
        p.error("--warmup must not be negative")
    return ns


def main(argv=None):
    ns = _parse_args(sys.argv[1:] if argv is None else argv)
    if ns.sdk_server:
        run_sdk_server()
        return 0

    import faulthandler
    import json
    import os
    import platform

    if ns.timeout and ns.timeout > 0:
        faulthandler.dump_traceback_later(ns.timeout, exit=True)

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
        },
        "mcp_ref": {},
        "sdk": {},
        "ratios": {},
        "notes": [],
    }

    note(
        "mcp_ref.bench: Python %s on %s, %s CPUs; %d calls x %d rounds (+%d warm-up), %d import pairs"
        % (figures["python"], figures["platform"], figures["cpus"], ns.calls, ns.rounds, ns.warmup, ns.import_reps)
    )

    failed = False  # an mcp_ref measurement failed: exit status 1 (SDK trouble is only noted)
    sdk_ok = not ns.skip_sdk and _module_available("mcp")
    if not ns.skip_sdk and not sdk_ok:
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
    if not ns.skip_mcp_ref:
        import_cases += [
            ("mcp_ref", "import", "import mcp_ref"),
            ("mcp_ref", "import_client", "from mcp_ref import Client"),
        ]
    if sdk_ok:
        import_cases += [
            ("sdk", "import", "import mcp"),
            ("sdk", "import_client", "from mcp import ClientSession; from mcp.client.stdio import stdio_client"),
        ]
    for side, key, statement in import_cases:
        try:
            r = measure_import_ms(statement, ns.import_reps)
        except Exception as exc:
            msg = "%r failed: %s" % (statement, exc)
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
            "%s: %s wall, %s by -X importtime"
            % (statement, _fmt(r["median_ms"], "ms"), _fmt(r["importtime_median_ms"], "ms"))
        )

    # round trips
    if not ns.skip_mcp_ref:
        try:
            r = bench_mcp_ref(ns.calls, ns.rounds, ns.warmup)
            for key in ("sequential", "concurrent"):
                figures["mcp_ref"][key] = r[key]["median"]
                figures["mcp_ref"][key + "_rounds"] = r[key]["rounds"]
            note(
                "mcp_ref echo: %s sequential, %s with %d threads"
                % (_fmt(r["sequential"]["median"], "/s"), _fmt(r["concurrent"]["median"], "/s"), CONCURRENCY)
            )
        except Exception as exc:
            msg = "mcp_ref round trips failed: %s: %s" % (type(exc).__name__, exc)
            figures["notes"].append(msg)
            failed = True
            note("note: " + msg)
    if sdk_ok:
        try:
            r = bench_sdk(ns.calls, ns.rounds, ns.warmup)
            for key in ("sequential", "concurrent"):
                figures["sdk"][key] = r[key]["median"]
                figures["sdk"][key + "_rounds"] = r[key]["rounds"]
            note(
                "SDK echo: %s sequential, %s with %d asyncio tasks"
                % (_fmt(r["sequential"]["median"], "/s"), _fmt(r["concurrent"]["median"], "/s"), CONCURRENCY)
            )
        except Exception as exc:
            msg = "SDK round trips failed: %s: %s" % (type(exc).__name__, exc)
            figures["notes"].append(msg)
            note("note: " + msg)

    for key in ("import", "import_importtime", "import_client", "import_client_importtime"):
        figures["ratios"][key] = _ratio(figures["mcp_ref"].get(key), figures["sdk"].get(key))
    for key in ("sequential", "concurrent"):
        figures["ratios"][key] = _ratio(figures["mcp_ref"].get(key), figures["sdk"].get(key))

    faulthandler.cancel_dump_traceback_later()

    print()
    print_table(figures)
    print()
    print(
        "import package: `import mcp_ref` / `import mcp`; import client: `from mcp_ref import Client` /"
        " `from mcp import ClientSession` + stdio_client (warm, bytecode cached; median of %d)." % ns.import_reps
    )
    print(
        "echo calls: tools/call over stdio to a server of the same implementation; mcp_ref with %d threads"
        " on one Client, the SDK with %d asyncio tasks on one ClientSession." % (CONCURRENCY, CONCURRENCY)
    )
    print(
        "Medians of %d rounds on a %s-CPU machine; expect run-to-run noise of 10%% or more, "
        "so compare figures from the same run only." % (ns.rounds, figures["cpus"])
    )
    if ns.quick:
        print("--quick: smoke-test sizes; these figures are not a measurement.")
    if ns.json:
        print(json.dumps(figures, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
