"""``python benchmarks/bench.py --against REV``: this checkout against another revision, in one run.

The revision's tree is exported with ``git archive REV | tar -x`` into a
temporary folder (from the checkout's repository; no git state changes).
Each figure is then measured for both trees, alternated (the order swapped
from one pair to the next), every side in its own interpreters with
``PYTHONPATH=<tree>``, so that each runs its own client and server code; the
server programs are this checkout's ``servers/`` files, which use only the
public API both trees have.  "HEAD" is the checkout's work tree as it is
(uncommitted changes included); "REV" the exported revision.  Printed:
medians per side and the ratio HEAD/REV, for

* stdio ``tools/call``, sequential, client and server pinned to one CPU
  (``bench_side.py``; wall, client CPU and server CPU µs per call, calls/s),
  in each era;
* stdio, 8 threads sharing one client, unpinned, in each era;
* the HTTP client, 8 threads sharing one ``Client.http``, in each era,
  against one server (REV's stateless ``servers/mcp_ref_http_echo.py``), so
  that only the client differs;
* HTTP server capacity: bare ``tools/call`` POSTs of each era from the load
  generator to each tree's stateless echo server, the runs interleaved;
* ``from mcp_ref import Client, Server``: warm import time, wall of
  ``python -c`` minus ``python -c pass``, paired.

Then the targets of issue 24's "Done when".  Bytecode goes to one temporary
``PYTHONPYCACHEPREFIX`` for every child, so neither tree is written to.
"""

from __future__ import annotations

import os
import sys

SIDES = ("HEAD", "REV")
IMPORT_STATEMENT = "from mcp_ref import Client, Server"
ERAS = ("handshake", "modern")
ERA_LABELS = {"handshake": "handshake", "modern": "2026-07-28"}
#: The thresholds of issue 24's "Done when" (HEAD/REV of the figure named).
TARGETS = (
    ("stdio sequential pinned, %s: calls/s >= 1.3x", "stdio_pinned_%s_rate", ">=", 1.3, ERAS),
    (
        "stdio sequential pinned, %s, by CPU time: client + server CPU/call <= 0.77x (1/1.3)",
        "stdio_pinned_%s_cpu_us",
        "<=",
        1 / 1.3,
        ERAS,
    ),
    ("HTTP client, 8 threads, %s: calls/s >= 2x", "http_client_%s_rate", ">=", 2.0, ERAS),
    ("import Client, Server: time <= 0.7x", "import_both_ms", "<=", 0.7, (None,)),
    (
        "import Client, Server, by the child's CPU time: <= 0.7x",
        "import_both_cpu_ms",
        "<=",
        0.7,
        (None,),
    ),
    (
        "HTTP server capacity, %s: within noise or better (>= 0.95x)",
        "capacity_%s_rps",
        ">=",
        0.95,
        ERAS,
    ),
)


class ExportError(RuntimeError):
    """The revision could not be exported (unknown to git, or no mcp_ref package in it)."""


def _median(values):
    import statistics

    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _git(repo, *args):
    import subprocess

    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise ExportError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def export_tree(repo, rev, dest):
    """Write revision ``rev`` of the git repository at ``repo`` into folder ``dest``
    (``git archive REV | tar -x -C DEST``); return the commit's full id.

    Only reads the repository: no checkout, no index or ref changes.
    """
    import subprocess

    commit = _git(repo, "rev-parse", "--verify", "--end-of-options", rev + "^{commit}")
    archive = subprocess.Popen(
        ["git", "-C", repo, "archive", "--format=tar", commit],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        untar = subprocess.run(
            ["tar", "-x", "-C", dest], stdin=archive.stdout, capture_output=True, timeout=300
        )
    finally:
        archive.stdout.close()
        err = archive.stderr.read().decode("utf-8", "replace")
        archive.stderr.close()
        status = archive.wait(60)
    if status != 0 or untar.returncode != 0:
        raise ExportError(
            f"git archive {rev} | tar -x failed: {err.strip()} {untar.stderr.decode().strip()}"
        )
    if not os.path.isfile(os.path.join(dest, "mcp_ref", "__init__.py")):
        raise ExportError(f"revision {rev} has no mcp_ref package")
    return commit


def _order(i):
    """The sides' order in pair ``i``: swapped from one pair to the next."""
    return SIDES if i % 2 == 0 else SIDES[::-1]


def measure_imports(trees, reps, pycache, cwd, statement=IMPORT_STATEMENT):
    """Warm import time (ms) of ``statement`` per tree: ``python -c statement`` minus
    ``python -c pass``, run back to back, the trees alternated; and what ``-X importtime``
    charges to it.  ``({side: [wall samples]}, {side: [CPU samples]}, {side: [importtime samples]})``: the
    child's CPU time (``wait4``) is the steadier figure while other work shares the machine."""
    import subprocess
    import time

    import bench
    from bench_side import side_env

    envs = {side: side_env(tree, pycache) for side, tree in trees.items()}

    def run(cmd, env):
        """Wall and CPU (user + sys, from ``wait4``) seconds of one child."""
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise subprocess.CalledProcessError(child.returncode, cmd)
        return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime

    for (
        side,
        env,
    ) in envs.items():  # which mcp_ref each side imports; and the bytecode written, untimed
        where = subprocess.run(
            [sys.executable, "-c", "import mcp_ref; print(mcp_ref.__file__)"],
            env=env,
            cwd=cwd,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout.strip()
        if not os.path.realpath(where).startswith(os.path.realpath(trees[side]) + os.sep):
            raise RuntimeError(f"{side} imports {where}, not the mcp_ref of {trees[side]}")
        run([sys.executable, "-c", statement], env)
    samples = {side: [] for side in trees}
    cpus = {side: [] for side in trees}
    itimes = {side: [] for side in trees}
    for i in range(reps):
        for side in _order(i):
            base_wall, base_cpu = run([sys.executable, "-c", "pass"], envs[side])
            wall, cpu = run([sys.executable, "-c", statement], envs[side])
            samples[side].append((wall - base_wall) * 1000.0)
            cpus[side].append((cpu - base_cpu) * 1000.0)
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", statement],
                env=envs[side],
                cwd=cwd,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
            )
            us = bench._importtime_us(done.stderr)
            if us is not None:
                itimes[side].append(us / 1000.0)
    return samples, cpus, itimes


def run_against(ns, note):
    """Measure this checkout against ``ns.against``; print the table; return (figures, ok)."""
    import tempfile

    import bench

    repo = bench._repo_root()
    with tempfile.TemporaryDirectory(prefix="mcp_ref_bench_against_") as tmp:
        rev_tree = os.path.join(tmp, "tree")
        pycache = os.path.join(tmp, "pycache")
        neutral = os.path.join(tmp, "cwd")
        for path in (rev_tree, pycache, neutral):
            os.mkdir(path)
        commit = export_tree(repo, ns.against, rev_tree)
        trees = {"HEAD": repo, "REV": rev_tree}
        try:
            head = _git(repo, "rev-parse", "--short", "HEAD")
        except ExportError:
            head = "?"
        note(
            f"HEAD = the work tree {repo} (git HEAD {head}, uncommitted changes included);"
            f" REV = {ns.against} ({commit[:12]}), exported to {rev_tree}"
        )
        figures = {
            "against": ns.against,
            "commit": commit,
            "head": head,
            "samples": {},
            "notes": [],
        }
        ok = _measure_all(ns, note, trees, pycache, neutral, figures)
    figures["medians"] = {
        key: {"HEAD": h, "REV": r, "ratio": x} for key, (h, r, x) in ratios(figures).items()
    }
    print()
    print_against(figures)
    if ns.json:
        import json

        print(json.dumps(figures, sort_keys=True))
    return figures, ok


def _measure_all(ns, note, trees, pycache, cwd, figures):
    from bench_side import run_side

    samples = figures["samples"]  # key -> {side: [per-process medians]}
    ok = True

    def add(key, side, value):
        samples.setdefault(key, {s: [] for s in SIDES})[side].append(value)

    def sides_of(spec_for, prefix, pairs):
        for i in range(pairs):
            for side in _order(i):
                r = run_side(trees[side], spec_for(side), cwd=cwd, pycache=pycache)
                for name in ("wall_us", "client_us", "server_us", "cpu_us", "rate"):
                    add(prefix + name, side, r[name + "_median"])

    def fail(what, exc):
        nonlocal ok
        ok = False
        msg = f"{what} failed: {type(exc).__name__}: {exc}"
        figures["notes"].append(msg)
        note("note: " + msg)

    base = {"calls": ns.calls, "rounds": ns.rounds, "warmup": ns.warmup}
    for era in ERAS:
        for pinned, threads, tag in (
            (True, 1, f"stdio_pinned_{era}_"),
            (False, 8, f"stdio_8threads_{era}_"),
        ):
            how = "sequential pinned" if pinned else "8 threads unpinned"
            what = f"stdio, {ERA_LABELS[era]}, {how}"
            note(f"{what}: {ns.pairs} pairs ...")
            try:
                sides_of(
                    lambda side, e=era, p=pinned, t=threads: dict(
                        base, mode="stdio", era=e, pin=p, threads=t
                    ),
                    tag,
                    ns.pairs,
                )
            except Exception as exc:
                fail(what, exc)
    if not ns.skip_http:
        _http_figures(ns, note, trees, pycache, cwd, figures, sides_of, fail)
    note(f"import {IMPORT_STATEMENT!r}: {ns.import_reps} pairs ...")
    try:
        walls, cpus, itimes = measure_imports(trees, ns.import_reps, pycache, cwd)
        samples["import_both_ms"], samples["import_both_cpu_ms"] = walls, cpus
        samples["import_both_importtime_ms"] = itimes
    except Exception as exc:
        fail("import time", exc)
    return ok


def _http_figures(ns, note, trees, pycache, cwd, figures, sides_of, fail):
    import contextlib

    import bench
    from bench_side import side_env

    generator = ns.load_generator
    if generator == "auto":
        generator = "wrk" if bench._wrk_path() else "python"
    figures["load_generator"] = generator
    with contextlib.ExitStack() as stack:
        servers = {}
        for side in SIDES:
            try:
                server = stack.enter_context(
                    bench.HttpServerProcess(
                        f"{side}'s stateless echo",
                        bench.MCP_REF_HTTP_SERVER,
                        ["1"],
                        env=side_env(trees[side], pycache),
                    )
                )
                bench.check_bare_tools_call(server)
                servers[side] = server
            except Exception as exc:
                fail(f"{side}'s HTTP server", exc)
        if "REV" in servers:
            rev = servers["REV"]
            for era in ERAS:
                note(
                    f"HTTP client, 8 threads, {ERA_LABELS[era]}, against REV's server:"
                    f" {ns.pairs} pairs ..."
                )
                try:
                    sides_of(
                        lambda side, e=era: {
                            "mode": "http",
                            "era": e,
                            "url": rev.url,
                            "server_pid": rev.proc.pid,
                            "calls": ns.http_calls,
                            "rounds": ns.http_rounds,
                            "warmup": ns.warmup,
                            "threads": 8,
                        },
                        f"http_client_{era}_",
                        ns.pairs,
                    )
                    rev.check_alive()
                except Exception as exc:
                    fail(f"HTTP client, {ERA_LABELS[era]}", exc)
        targets = {}
        if len(servers) == 2:
            for era in ERAS:
                try:
                    for side in SIDES:
                        bench.check_bare_tools_call(servers[side], era)
                    targets.update(
                        {
                            (side, era): (servers[side].url, era, servers[side].proc.pid)
                            for side in SIDES
                        }
                    )
                except Exception as exc:
                    fail(f"a bare {ERA_LABELS[era]} POST", exc)
        if targets:
            note(
                f"HTTP server capacity ({generator}): {ns.load_duration} s x {ns.load_runs} runs"
                " per target, interleaved ..."
            )
            try:
                results = bench.bench_capacity(targets, ns.load_runs, ns.load_duration, generator)
            except Exception as exc:
                fail("HTTP server capacity", exc)
                results = {}
            for (side, era), r in results.items():
                figures["samples"].setdefault(f"capacity_{era}_rps", {s: [] for s in SIDES})[
                    side
                ] = r["runs"]
                figures["samples"].setdefault(f"capacity_{era}_cpu_us", {s: [] for s in SIDES})[
                    side
                ] = r["cpu_us_runs"]
                if r["non_2xx"] or r["socket_errors"]:
                    figures["notes"].append(
                        f"{side} {era} under load: {r['non_2xx']} non-2xx,"
                        f" {r['socket_errors']} socket errors"
                    )


def rows():
    """The table's rows: (label, key, unit, sense)."""
    out = []
    for tags, whats in (
        ("stdio_pinned_%s_", "stdio sequential, pinned to 1 CPU, %s"),
        ("stdio_8threads_%s_", "stdio 8 threads, unpinned, %s"),
        ("http_client_%s_", "HTTP client, 8 threads, one Client, %s"),
    ):
        for era in ERAS:
            tag, what = tags % era, whats % ERA_LABELS[era]
            out += [
                (what + ": calls/s", tag + "rate", "/s", "higher"),
                ("  wall us/call", tag + "wall_us", "us", "lower"),
                ("  client CPU us/call", tag + "client_us", "us", "lower"),
                ("  server CPU us/call", tag + "server_us", "us", "lower"),
                ("  client + server CPU us/call", tag + "cpu_us", "us", "lower"),
            ]
    for era in ERAS:
        out += [
            (
                f"HTTP server capacity, {ERA_LABELS[era]}: req/s",
                f"capacity_{era}_rps",
                "/s",
                "higher",
            ),
            ("  server CPU us/request", f"capacity_{era}_cpu_us", "us", "lower"),
        ]
    out.append(("import Client, Server (warm, -c minus pass)", "import_both_ms", "ms", "lower"))
    out.append(("  CPU of the child (-c minus pass)", "import_both_cpu_ms", "ms", "lower"))
    out.append(("  by -X importtime", "import_both_importtime_ms", "ms", "lower"))
    return out


def _fmt(value, unit):
    if value is None:
        return "n/a"
    if unit == "/s":
        return f"{value:,.0f}"
    return f"{value:.1f}"


def ratios(figures):
    """``{key: (HEAD median, REV median, HEAD/REV)}`` for every figure measured on both sides."""
    out = {}
    for key, by_side in figures["samples"].items():
        head, rev = _median(by_side.get("HEAD", [])), _median(by_side.get("REV", []))
        out[key] = (head, rev, head / rev if head is not None and rev else None)
    return out


def print_against(figures, out=sys.stdout):
    """Print the medians of both sides, HEAD/REV, and issue 24's targets."""
    import bench

    table = ratios(figures)
    lines = []
    for label, key, unit, sense in rows():
        if key not in table:
            continue
        head, rev, ratio = table[key]
        units = {"/s": "", "us": "", "ms": " ms"}[unit]
        lines.append(
            (
                label,
                _fmt(head, unit) + units,
                _fmt(rev, unit) + units,
                "n/a" if ratio is None else f"{ratio:.2f}x",
                f"{sense} is better",
            )
        )
    bench._print_rows(
        ("figure (medians)", "HEAD", "REV " + figures["against"], "HEAD/REV", ""), lines, out
    )
    print(file=out)
    print(f"Targets (issue 24, HEAD against {figures['against']}):", file=out)
    for label, key, op, bound, eras in TARGETS:
        for era in eras:
            name = key % era if era else key
            ratio = table.get(name, (None, None, None))[2]
            verdict = (
                "n/a"
                if ratio is None
                else ("met" if (ratio >= bound if op == ">=" else ratio <= bound) else "NOT met")
            )
            what = label % ERA_LABELS[era] if era else label
            shown = "n/a" if ratio is None else f"{ratio:.2f}x"
            print(f"  {what}: {verdict} ({shown})", file=out)
    for era in ERAS:  # pinned: the wall time should be the two processes' CPU time
        for side in SIDES:
            wall = _median(figures["samples"].get(f"stdio_pinned_{era}_wall_us", {}).get(side, []))
            cpu = _median(figures["samples"].get(f"stdio_pinned_{era}_cpu_us", {}).get(side, []))
            if wall and cpu and wall > 1.1 * cpu:
                print(
                    f"note: {side}, {ERA_LABELS[era]}, pinned: wall {wall:.0f} us/call against {cpu:.0f} us"
                    " of client + server CPU: the CPU was shared with other work, so the wall and calls/s"
                    " figures are inflated; compare the CPU rows",
                    file=out,
                )
    for msg in figures["notes"]:
        print("note: " + msg, file=out)
