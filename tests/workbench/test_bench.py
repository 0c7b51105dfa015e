"""The benchmark (``benchmarks/``, not installed) starts from any directory and uses mcp_ref's public API only."""

import ast
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, WAIT

import mcp_ref

BENCH = ROOT / "benchmarks" / "bench.py"
MODULES = sorted(
    (ROOT / "benchmarks").glob("*.py")
)  # bench.py and the sections it imports (state_bench.py)
SERVERS = sorted((ROOT / "benchmarks" / "servers").glob("*.py"))


def _run(args, cwd, timeout=WAIT * 3):
    return subprocess.run(
        [sys.executable, str(BENCH), *args],
        cwd=str(cwd),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_benchmark_is_not_in_the_package():
    assert not (ROOT / "mcp_ref" / "bench.py").exists()
    assert BENCH.is_file()


def test_help_from_another_directory(tmp_path):
    done = _run(["--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python benchmarks/bench.py")
    for option in (
        "--quick",
        "--calls",
        "--rounds",
        "--json",
        "--skip-http",
        "--skip-sdk",
        "--load-generator",
        "--http-only",
        "--state-only",
        "--skip-state",
        "--state-calls",
        "--state-changes",
        "--against",
        "--pairs",
    ):
        assert option in done.stdout


def test_importing_the_runner_is_cheap():
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH.parent)!r}); import bench, bench_side, bench_against; "
        "print(sorted(m for m in ('mcp_ref', 'mcp', 'asyncio', 'http.client') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_servers_are_documented_and_watch_their_parent():
    names = {path.name for path in SERVERS}
    assert {
        "_watch.py",
        "sdk_stdio_echo.py",
        "sdk_http_echo.py",
        "mcp_ref_http_echo.py",
        "mcp_ref_stdio_echo.py",
        "baseline_http.py",
        "mcp_ref_state_app.py",
    } <= names
    for path in SERVERS:
        source = path.read_text()
        tree = ast.parse(source, str(path))
        assert ast.get_docstring(tree), path.name
        if path.name != "_watch.py":
            assert "_watch.watch_parent()" in source, path.name
            assert f"python benchmarks/servers/{path.name}" in ast.get_docstring(tree), path.name


def test_only_public_names_of_mcp_ref():
    assert BENCH in MODULES
    for path in [*MODULES, *SERVERS]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                assert not any(alias.name.startswith("mcp_ref.") for alias in node.names), path.name
            elif (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.split(".")[0] == "mcp_ref"
            ):
                assert node.module == "mcp_ref", (path.name, node.module)
                assert all(alias.name in mcp_ref.__all__ for alias in node.names), path.name


@pytest.mark.slow
def test_a_tiny_stdio_run_prints_the_table(tmp_path):
    args = [
        "--skip-sdk",
        "--skip-http",
        "--import-reps",
        "1",
        "--calls",
        "16",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--json",
    ]
    done = _run(args, tmp_path, timeout=WAIT * 6)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("benchmarks/bench.py: Python ")
    for row in (
        "import package, wall (-c diff)",
        "echo calls, handshake, sequential",
        "echo calls, handshake, 8 concurrent",
        "echo calls, 2026-07-28, sequential",
        "echo calls, 2026-07-28, 8 concurrent",
        "mcp_ref stdio tools/call",
        "handshake, sequential, pinned to 1 CPU",
        "handshake, sequential, unpinned",
        "handshake, 8 threads, unpinned",
        "2026-07-28, sequential, pinned to 1 CPU",
        "2026-07-28, 8 threads, unpinned",
    ):
        assert any(line.startswith(row) for line in lines), row
    figures = json.loads(lines[-1])
    for key in ("sequential", "concurrent", "modern_sequential", "modern_concurrent"):
        assert figures["mcp_ref"][key] > 0, key
    assert figures["notes"] == []
    for era in ("handshake", "modern"):
        for mode in ("pinned", "unpinned", "threads"):
            cell = figures["mcp_ref"]["stdio"][era][mode]
            assert all(cell[key] > 0 for key in ("rate", "wall_us", "client_us", "server_us")), (
                era,
                mode,
                cell,
            )


def _benchmark(name: str = "bench"):
    """A module of benchmarks/ (``bench``, ``bench_side``), imported from there."""
    import importlib

    sys.path.insert(0, str(BENCH.parent))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH.parent))


def test_the_2026_post_is_what_an_mcp_ref_client_sends():
    from mcp_ref import lifecycle
    from mcp_ref.http.headers import request_headers

    bench = _benchmark()
    body = json.loads(bench.MODERN_TOOLS_CALL_BODY)
    assert body["method"] == "tools/call" and body["params"]["name"] == "echo"
    meta = body["params"]["_meta"]
    assert meta[lifecycle.PROTOCOL_VERSION] == bench.MODERN_PROTOCOL_VERSION
    assert meta[lifecycle.CLIENT_CAPABILITIES] == {} and "name" in meta[lifecycle.CLIENT_INFO]
    assert lifecycle.is_modern(body["params"])
    headers = bench.MODERN_HTTP_HEADERS
    assert headers["MCP-Protocol-Version"] == bench.MODERN_PROTOCOL_VERSION
    for name, value in request_headers("tools/call", body["params"]).items():
        assert headers[name] == value
    handshake = json.loads(bench.TOOLS_CALL_BODY)
    assert handshake["params"] == {
        key: value for key, value in body["params"].items() if key != "_meta"
    }


@pytest.mark.slow
def test_a_tiny_http_run_prints_both_eras(tmp_path):
    args = [
        "--http-only",
        "--skip-sdk",
        "--http-calls",
        "16",
        "--http-rounds",
        "1",
        "--warmup",
        "2",
        "--load-generator",
        "python",
        "--load-duration",
        "1",
        "--load-runs",
        "1",
        "--json",
    ]
    done = _run(args, tmp_path, timeout=WAIT * 9)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert not any(line.startswith("echo calls, ") for line in lines)  # --http-only: no stdio rows
    for row in (
        "HTTP echo calls, handshake, sequential",
        "HTTP echo calls, handshake, 8 concurrent",
        "HTTP echo calls, 2026-07-28, sequential",
        "HTTP echo calls, 2026-07-28, 8 concurrent",
        "HTTP server capacity, handshake (",
        "HTTP server capacity, 2026-07-28 (",
        "2026-07-28 / handshake",
        "HTTP serving speed (1 / server CPU per request, paired runs)",
        "  mcp_ref server CPU time per request served",
        "  target (issue 10): ",
    ):
        assert any(line.startswith(row) for line in lines), row
    figures = json.loads(lines[-1])
    assert figures["notes"] == []
    ref = figures["mcp_ref"]
    for key in (
        "http_sequential",
        "http_concurrent",
        "http_capacity",
        "http_modern_sequential",
        "http_modern_concurrent",
        "http_modern_capacity",
        "http_cpu_us",
        "http_modern_cpu_us",
    ):
        assert ref[key] > 0, key
    assert set(figures["era_ratios"]["mcp_ref"]) == {
        "http_sequential",
        "http_concurrent",
        "http_capacity",
        "http_cpu_us",
    }
    assert all(value > 0 for value in figures["era_ratios"]["mcp_ref"].values())


@pytest.mark.slow
def test_a_tiny_shared_state_run_prints_memory_against_redis(tmp_path):
    from redis_fixture import required_binary

    required_binary()  # skipped without a redis-server; failed under CI
    if importlib.util.find_spec("redis") is None:
        message = "shared-state rows need redis-py (the redis test extra)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    done = _run(
        ["--state-only", "--quick", "--state-calls", "20", "--state-changes", "2", "--json"],
        tmp_path,
        timeout=WAIT * 9,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "shared-state rows only" in lines[0]
    assert not any(
        line.startswith(("echo calls", "HTTP echo calls", "import package")) for line in lines
    )
    for row in (
        "rate-limited tools/call, p50 latency",
        "rate-limited tools/call, p99 latency",
        "change -> listener, median",
        "handshake tools/call, p50 latency",
        "handshake tools/call, p99 latency",
        "handshake, other deployment, p50 latency",
        "  handshake tools/call: the same call in the 2025-11-25 era",
        "  target (issue 22 section 6): Redis adds at most 0.2 ms at p50: ",
        f"  On {os.cpu_count()} CPUs",
    ):
        assert any(line.startswith(row) for line in lines), row
    figures = json.loads(lines[-1])
    assert not any("failed" in note for note in figures["notes"]), figures["notes"]
    state = figures["state"]
    for mode in ("memory", "redis"):
        assert 0 < state[mode]["p50_ms"] <= state[mode]["p99_ms"], state[mode]
        assert len(state[mode]["p50_ms_rounds"]) == figures["settings"]["rounds"]
    assert state["redis"]["redis_cpu_us"] is not None and state["memory"]["redis_cpu_us"] is None
    for key in ("delay_redis_other_worker", "delay_memory_same_worker"):
        assert len(state[key]["samples_ms"]) == state["changes"] and state[key]["median_ms"] > 0, (
            state[key]
        )
    handshake = state[
        "handshake"
    ]  # sessions (stateless=False): in memory, on Redis, made on A and served by B
    for mode in ("memory", "redis", "other"):
        assert 0 < handshake[mode]["p50_ms"] <= handshake[mode]["p99_ms"], handshake[mode]
        assert len(handshake[mode]["p50_ms_rounds"]) == figures["settings"]["rounds"]
    for mode in ("redis", "other"):
        assert (
            handshake[mode]["redis_scripts"] >= 1 and handshake[mode]["p50_diff_ms"] is not None
        ), handshake[mode]
    assert handshake["memory"]["redis_scripts"] is None


BURNER = """
import os, sys, threading, time
tids = []
def burn():
    tids.append(threading.get_native_id())
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
t = threading.Thread(target=burn)
t.start()
t.join()
deadline = time.monotonic() + 10
while os.path.exists("/proc/self/task/%d" % tids[0]) and time.monotonic() < deadline:
    time.sleep(0.001)  # join() returns before the OS thread is gone: wait for that, bounded
print("burnt", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="/proc is Linux's")
def test_the_cpu_readers_count_a_process_and_its_exited_threads():
    side = _benchmark("bench_side")
    proc = subprocess.Popen(
        [sys.executable, "-c", BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline() == "burnt\n"  # the burning thread (0.3 s of CPU) has ended
        whole, live = side.process_cpu_ns(proc.pid), side.schedstat_ns(proc.pid)
        assert whole >= 0.3e9, whole  # the exited thread's CPU counts
        assert 0 < live <= whole - 0.25e9, (live, whole)  # schedstat lists live threads only
    finally:
        proc.stdin.close()
        proc.wait(WAIT)
    assert side.schedstat_ns(proc.pid) is None


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_a_pinned_stdio_side_shares_one_cpu_with_its_server():
    side = _benchmark("bench_side")
    spec = {"mode": "stdio", "era": "handshake", "pin": True, "calls": 20, "rounds": 2, "warmup": 2}
    figures = side.run_side(str(ROOT), spec, timeout=WAIT * 3)
    assert figures["era"] == "handshake"
    assert figures["pinned_cpu"] == min(os.sched_getaffinity(0))
    assert figures["server_cpus"] == [
        figures["pinned_cpu"]
    ]  # the server inherited the client's mask
    assert os.path.realpath(figures["mcp_ref_file"]).startswith(str(ROOT / "mcp_ref"))
    for key in ("wall_us", "client_us", "server_us", "rate"):
        assert len(figures[key]) == 2 and all(value > 0 for value in figures[key]), key
    # one CPU for both: their CPU time cannot exceed the wall time (with a little slack for reading it)
    assert (
        figures["client_us_median"] + figures["server_us_median"]
        <= figures["wall_us_median"] * 1.05
    )
    spec.update(pin=False, era="modern", threads=3)
    figures = side.run_side(str(ROOT), spec, timeout=WAIT * 3)
    assert (
        figures["pinned_cpu"] is None
        and figures["era"] == "modern"
        and len(figures["server_cpus"]) >= 1
    )


def _git_checkout():
    import shutil

    if shutil.which("git") is None or shutil.which("tar") is None:
        pytest.skip("needs git and tar")
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=WAIT
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return done.stdout.strip()


def test_a_revision_is_exported_without_touching_the_repository(tmp_path):
    sys.path.insert(0, str(BENCH.parent))
    try:
        import bench_against
    finally:
        sys.path.remove(str(BENCH.parent))
    head = _git_checkout()
    git_dir = ROOT / ".git"
    before = {
        path.name: path.stat().st_mtime_ns
        for path in (git_dir / "index", git_dir / "HEAD")
        if path.exists()
    }
    assert bench_against.export_tree(str(ROOT), "HEAD", str(tmp_path)) == head
    assert (tmp_path / "mcp_ref" / "__init__.py").is_file() and (
        tmp_path / "benchmarks" / "bench.py"
    ).is_file()
    assert not (tmp_path / ".git").exists()
    after = {
        path.name: path.stat().st_mtime_ns
        for path in (git_dir / "index", git_dir / "HEAD")
        if path.exists()
    }
    assert after == before
    with pytest.raises(bench_against.ExportError):
        bench_against.export_tree(str(ROOT), "no-such-revision-here", str(tmp_path / "x"))


@pytest.mark.slow
def test_a_tiny_run_against_a_revision(tmp_path):
    _git_checkout()
    args = [
        "--against",
        "HEAD",
        "--skip-http",
        "--calls",
        "10",
        "--rounds",
        "1",
        "--warmup",
        "1",
        "--pairs",
        "1",
        "--import-reps",
        "1",
        "--json",
    ]
    done = _run(args, tmp_path, timeout=WAIT * 6)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for row in (
        "stdio sequential, pinned to 1 CPU, handshake: calls/s",
        "stdio 8 threads, unpinned, 2026-07-28: calls/s",
        "  server CPU us/call",
        "import Client, Server",
        "Targets (issue 24, HEAD against HEAD):",
        "  stdio sequential pinned, 2026-07-28: calls/s >= 1.3x: ",
    ):
        assert any(line.startswith(row) for line in lines), row
    figures = json.loads(lines[-1])
    assert figures["notes"] == []
    medians = figures["medians"]
    for key in (
        "stdio_pinned_handshake_rate",
        "stdio_pinned_modern_server_us",
        "stdio_8threads_modern_client_us",
        "stdio_pinned_modern_cpu_us",
        "import_both_importtime_ms",
    ):
        assert medians[key]["HEAD"] > 0 and medians[key]["REV"] > 0 and medians[key]["ratio"] > 0, (
            key
        )
    assert (
        medians["import_both_ms"]["ratio"] is not None
    )  # a difference of two wall times: one pair may be < 0
    assert not any(key.startswith(("http_", "capacity_")) for key in medians)  # --skip-http
    bad = _run(["--against", "no-such-revision-here", "--skip-http"], tmp_path)
    assert bad.returncode == 2 and "no-such-revision-here" in bad.stderr
