"""Run the official MCP conformance suite against mcp_ref's conformance server and client.

    python tests/conformance/run.py                     # every suite below
    python tests/conformance/run.py server-2025-11-25   # one or more of them by name
    python tests/conformance/run.py --list

Suites: the 2025-11-25 requirement set (``--requirements 2025-11-25``, what conformance to that revision
means) for the server and the client; the 2026-07-28 requirement set for the server (the stateless era,
served by the same endpoint); every scenario that applies at 2025-11-25 (``--suite all``, pending
ones too) for both; the server suite at 2025-06-18; the client's 2025-03-26 authorization scenarios
(``--suite backcompat``); and ``conformance authorization`` against the demo authorization server
(``mcp-ref serve-demo --http --auth``).  The server is tests/conformance/server.py (started
here on a free port, stopped afterwards), the client tests/conformance/client.py.  Each run uses the baseline tests/conformance/expected-failures.yml
(``--expected-failures``) and writes its checks.json files under ``-o``.  A suite fails on a check
that fails and is not in the baseline, and on a baseline entry that now passes (stale); the tool
itself exits non-zero on both, and this runner checks the checks.json files the same way so a
tool that exits 0 for the wrong reason is caught too.  For the client suite it also reads
client.py's own verdict per scenario (the pseudo-check ``SCENARIO:client-result``), which the tool
does not record.

Needs Node 22+ (``npx`` on PATH); .ci/conformance.sh installs it.  Prints one line per suite,
``server 2025-11-25: 84 passed, 0 failed``, and a total line last.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
BASELINE = HERE / "expected-failures.yml"
SERVER_READY_TIMEOUT = 30.0  # seconds to wait for server.py to accept connections
CLIENT_RESULT = "client-result"  # pseudo check id: client.py's own RESULT line for a scenario
SUITE_TIMEOUT = 300  # seconds for one run of the tool (a whole run takes well under a minute)


@dataclass
class Suite:
    name: str  # e.g. "server-2025-11-25"
    side: str  # "server" or "client"
    spec_version: str
    #: True: ``--requirements REVISION``, exactly the scenarios that revision requires (what conformance
    #: means); False: ``--suite SUITE --spec-version REVISION``, every scenario of SUITE that applies.
    requirements: bool = False
    #: "all" (pending scenarios too); "backcompat": the scenarios of revisions before 2025-06-18.
    suite: str = "all"

    @property
    def label(self) -> str:
        kind = (
            "requirements "
            if self.requirements
            else ""
            if self.suite == "all"
            else f"{self.suite} "
        )
        return f"{self.side} {kind}{self.spec_version}"

    def selection(self) -> list[str]:
        if self.requirements:
            return ["--requirements", self.spec_version]
        # "all", not the default "active": active leaves out the scenarios the tool calls pending
        # (json-schema-2020-12, server-sse-polling at these revisions).
        if self.side == "authorization":
            return ["--spec-version", self.spec_version]
        return ["--suite", self.suite, "--spec-version", self.spec_version]


SUITES = [
    Suite("server-requirements-2025-11-25", "server", "2025-11-25", requirements=True),
    # The stateless era, at the same endpoint (issue 10): every scored scenario, the pending header
    # scenarios, and the tasks extension (in the baseline until it is built).
    Suite("server-requirements-2026-07-28", "server", "2026-07-28", requirements=True),
    Suite("server-2025-11-25", "server", "2025-11-25"),
    Suite("server-2025-06-18", "server", "2025-06-18"),
    Suite("client-requirements-2025-11-25", "client", "2025-11-25", requirements=True),
    # The client at the stateless wire (issue 10): every scored scenario and the auth extensions.
    Suite("client-requirements-2026-07-28", "client", "2026-07-28", requirements=True),
    Suite("client-2025-11-25", "client", "2025-11-25"),
    # The 2025-03-26 authorization of a server without protected resource metadata (issue 9).
    Suite("client-backcompat-2025-03-26", "client", "2025-03-26", suite="backcompat"),
    # The demo authorization server (mcp-ref serve-demo --http --auth): metadata, and a code grant
    # whose authorization URL this runner visits, playing the browser (the demo approves at once).
    Suite("authorization-2025-11-25", "authorization", "2025-11-25"),
]


@dataclass
class Outcome:
    suite: Suite
    tool_exit: int | None = None
    passed: int = 0
    failed: int = 0  # FAILURE checks
    warnings: int = 0
    scenarios: dict = field(default_factory=dict)  # scenario -> list of checks
    unexpected: list = field(default_factory=list)
    stale: list = field(default_factory=list)
    expected: list = field(default_factory=list)
    problems: list = field(
        default_factory=list
    )  # the runner's own troubles (server did not start ...)

    @property
    def ok(self) -> bool:
        return self.tool_exit == 0 and not self.unexpected and not self.stale and not self.problems


# -- the baseline ------------------------------------------------------------------------------


def load_baseline(path: Path) -> dict[str, list[str]]:
    """The expected-failures file: ``server:`` and ``client:`` lists of ``scenario`` or ``scenario:check-id``.

    A tiny reader for that one shape (keys, ``- item`` lines, ``#`` comments), so the runner needs no YAML library.
    """
    out: dict[str, list[str]] = {}
    if not path.exists():
        return out
    key = None
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        if not line.startswith((" ", "-")):
            name, sep, rest = line.partition(":")
            if not sep or rest.strip() not in ("", "[]"):
                raise SystemExit(f"{path}:{number}: expected 'server:' or 'client:', got {raw!r}")
            key = name.strip()
            out[key] = []
            continue
        item = line.strip()
        if not item.startswith("- ") or key is None:
            raise SystemExit(
                f"{path}:{number}: expected '- scenario' or '- scenario:check-id', got {raw!r}"
            )
        out[key].append(item[2:].strip().strip("'\""))
    return out


def compare(scenarios: dict[str, list[dict]], entries: list[str]) -> tuple[list, list, list]:
    """(unexpected failures, stale entries, expected failures), as the tool decides them.

    A check fails when its status is FAILURE or WARNING.  A whole-scenario entry is stale when no
    check of that scenario fails; a ``scenario:check`` entry is stale when that check succeeded.
    """
    whole = {e for e in entries if ":" not in e}
    per_check: dict[str, set] = {}
    for entry in entries:
        if ":" in entry:
            scenario, check = entry.split(":", 1)
            per_check.setdefault(scenario, set()).add(check)
    unexpected, stale, expected = [], [], []
    for scenario, checks in sorted(scenarios.items()):
        failing = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
        if scenario in whole:
            (expected if failing else stale).append(scenario)
            continue
        listed = per_check.get(scenario, set())
        for check in failing:
            (expected if check.get("id") in listed else unexpected).append(
                f"{scenario}:{check.get('id')}"
            )
        for check_id in sorted(listed):
            statuses = {c.get("status") for c in checks if c.get("id") == check_id}
            if statuses and statuses <= {"SUCCESS", "INFO"} and "SUCCESS" in statuses:
                stale.append(f"{scenario}:{check_id}")
    return unexpected, stale, expected


# -- checks.json -------------------------------------------------------------------------------

_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


def client_results(out_dir: Path) -> dict[str, str]:
    """scenario -> the client's own RESULT line (client.py prints it; the tool does not record exit statuses)."""
    results: dict[str, str] = {}
    for path in sorted(out_dir.rglob("stdout.txt")):
        name = _STAMP.sub("", path.parent.relative_to(out_dir).as_posix())
        lines = [
            line
            for line in path.read_text(errors="replace").splitlines()
            if line.startswith("client.py: RESULT ")
        ]
        results[name] = (
            lines[-1][len("client.py: RESULT ") :]
            if lines
            else "no RESULT line (the client crashed or was killed)"
        )
    return results


def read_checks(out_dir: Path, side: str) -> dict[str, list[dict]]:
    """scenario -> checks, from the ``-o`` directory (``[server-]SCENARIO-TIMESTAMP/checks.json``)."""
    scenarios: dict[str, list[dict]] = {}
    for path in sorted(out_dir.rglob("checks.json")):
        name = _STAMP.sub("", path.parent.relative_to(out_dir).as_posix())
        for prefix in ("server-", "authorization-server-"):
            if side in ("server", "authorization") and name.startswith(prefix):
                name = name[len(prefix) :]
                break
        try:
            checks = json.loads(path.read_text())
        except ValueError as exc:
            checks = [
                {"id": name, "status": "FAILURE", "errorMessage": f"unreadable checks.json: {exc}"}
            ]
        scenarios.setdefault(name, []).extend(checks)
    return scenarios


# -- processes -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float) -> str | None:
    """None once 127.0.0.1:port accepts a connection; otherwise why not."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"server.py exited with status {process.returncode} before accepting connections"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return None
        except OSError:
            time.sleep(0.1)
    return f"server.py did not accept connections on port {port} within {timeout:.0f} s"


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def tool_command(npx: str) -> list[str]:
    return [npx, "-y", PACKAGE]


def run_tool(args: list[str], log_path: Path, on_line=None) -> int:
    """Run the conformance tool, its output to the console and to ``log_path``.

    It runs in its own process group, which is killed whole after SUITE_TIMEOUT: the tool runs a
    client through a shell and, on its own timeout, kills only that shell.
    """
    print("$", " ".join(args), flush=True)
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        watchdog = threading.Timer(SUITE_TIMEOUT, kill)
        watchdog.start()
        try:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                if on_line is not None:
                    on_line(line)
                if not line.startswith("npm warn"):
                    sys.stdout.write(line)
            status = process.wait()
        finally:
            watchdog.cancel()
            try:  # whatever the tool left behind (a client it could not stop)
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if timed_out.is_set():
            print(f"run.py: the tool ran longer than {SUITE_TIMEOUT} s; stopped", flush=True)
            return 124
        return status


def run_suite(suite: Suite, npx: str, work: Path, baseline: Path, verbose: bool) -> Outcome:
    outcome = Outcome(suite)
    out_dir = work / suite.name
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    common = suite.selection() + ["-o", str(out_dir)]
    if (
        baseline.exists() and suite.side != "authorization"
    ):  # the authorization command takes no baseline
        common += ["--expected-failures", str(baseline)]
    if verbose:
        common.append("--verbose")
    print(f"\n===== {suite.label} =====", flush=True)
    if suite.side == "server":
        port = free_port()
        server_log = work / f"{suite.name}.server.log"
        with open(server_log, "w") as log:
            server = subprocess.Popen(
                [sys.executable, str(HERE / "server.py"), "--port", str(port)],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            problem = wait_for_port(port, server, SERVER_READY_TIMEOUT)
            if problem:
                outcome.problems.append(problem)
            else:
                outcome.tool_exit = run_tool(
                    tool_command(npx)
                    + ["server", "--url", f"http://127.0.0.1:{port}/mcp"]
                    + common,
                    work / f"{suite.name}.log",
                )
                if server.poll() is not None:
                    outcome.problems.append(
                        f"server.py died during the suite (status {server.returncode})"
                    )
        finally:
            stop(server)
        if outcome.problems or verbose:
            print(f"--- server.py output ({server_log}) ---\n{server_log.read_text()[-5000:]}")
    elif suite.side == "authorization":
        run_authorization(outcome, npx, work, common)
    else:
        # The tool splits --command on spaces and appends the scenario server's URL.
        command = f"{sys.executable} {(HERE / 'client.py').relative_to(ROOT).as_posix()}"
        if " " in sys.executable:
            outcome.problems.append(
                f"the tool cannot run a Python whose path has a space: {sys.executable}"
            )
        else:
            outcome.tool_exit = run_tool(
                tool_command(npx) + ["client", "--command", command] + common,
                work / f"{suite.name}.log",
            )
    outcome.scenarios = read_checks(out_dir, suite.side)
    for checks in outcome.scenarios.values():
        for check in checks:
            status = check.get("status")
            outcome.passed += status == "SUCCESS"
            outcome.failed += status == "FAILURE"
            outcome.warnings += status == "WARNING"
    if not outcome.scenarios and not outcome.problems:
        outcome.problems.append(f"no checks.json under {out_dir}")
    entries = load_baseline(baseline).get(suite.side, [])
    outcome.unexpected, outcome.stale, outcome.expected = compare(outcome.scenarios, entries)
    for scenario, checks in sorted(outcome.scenarios.items()):
        # A client scenario whose client never reached the scenario server can record no check at all
        # (initialize does), which the tool counts as a pass.
        if not checks and scenario not in entries:
            outcome.problems.append(
                f"{scenario}: recorded no checks (did the {suite.side} side run at all?)"
            )
    if suite.side == "client":
        # The client's own verdict, as the pseudo-check SCENARIO:client-result (the tool ignores an entry
        # naming a check it never emits; this runner treats it like any other baseline entry).
        for scenario, result in sorted(client_results(out_dir).items()):
            if scenario in entries:
                continue
            entry = f"{scenario}:{CLIENT_RESULT}"
            if result.startswith("ok"):
                if entry in entries:
                    outcome.stale.append(entry)
            elif entry in entries:
                outcome.expected.append(entry)
            else:
                outcome.unexpected.append(f"{entry} ({result})")
    return outcome


def run_authorization(outcome: Outcome, npx: str, work: Path, common: list[str]) -> None:
    """``conformance authorization`` against ``mcp-ref serve-demo --http --auth``, with the pre-registered
    public client; the code grant's authorization URL is visited once the tool's callback listens."""
    import requests

    port, callback_port = free_port(), free_port()
    server_log = work / f"{outcome.suite.name}.server.log"
    with open(server_log, "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcp_ref",
                "serve-demo",
                "--http",
                f"127.0.0.1:{port}",
                "--auth",
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    pending: list[str] = []

    def browse(line: str) -> None:
        line = line.strip()
        if "/authorize?" in line and line.startswith("http"):
            pending.append(line)
        elif line.startswith("Callback server started") and pending:
            url = pending.pop()
            threading.Thread(target=lambda: requests.get(url, timeout=30), daemon=True).start()

    try:
        problem = wait_for_port(port, server, SERVER_READY_TIMEOUT)
        if problem:
            outcome.problems.append(problem.replace("server.py", "serve-demo --auth"))
            return
        base = f"http://127.0.0.1:{port}"
        outcome.tool_exit = run_tool(
            tool_command(npx)
            + [
                "authorization",
                "--url",
                base,
                "--client-id",
                "mcp-ref-demo",
                "--resource",
                f"{base}/mcp",
                "-p",
                str(callback_port),
            ]
            + common,
            work / f"{outcome.suite.name}.log",
            on_line=browse,
        )
    finally:
        stop(server)


def find_npx() -> str:
    npx = os.environ.get("CONFORMANCE_NPX") or shutil.which("npx")
    if not npx:
        raise SystemExit(
            "run.py: npx not found; install Node 22 or newer (.ci/conformance.sh does)"
        )
    node = shutil.which("node")  # npx runs its packages with the first node on PATH
    version = (
        subprocess.run(
            [node, "--version"], check=False, capture_output=True, text=True
        ).stdout.strip()
        if node
        else ""
    )
    match = re.match(r"v(\d+)", version)
    if not match or int(match.group(1)) < 22:
        raise SystemExit(
            f"run.py: the conformance suite needs Node 22 or newer; found {version or 'no node'}"
        )
    return npx


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", help="suite names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the suites and exit")
    parser.add_argument(
        "--baseline", type=Path, default=BASELINE, help="the expected-failures file"
    )
    parser.add_argument(
        "--output", type=Path, help="where results go (default: a temporary directory, kept)"
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        for suite in SUITES:
            print(suite.name)
        return 0
    by_name = {s.name: s for s in SUITES}
    unknown = [name for name in args.suites if name not in by_name]
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    chosen = [by_name[name] for name in args.suites] or SUITES
    npx = find_npx()
    work = args.output or Path(tempfile.mkdtemp(prefix="mcp-ref-conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    outcomes = [run_suite(suite, npx, work, args.baseline, args.verbose) for suite in chosen]

    print("\n===== conformance summary =====")
    for o in outcomes:
        name = o.suite.label
        for label, items in (
            ("expected failure (baseline)", o.expected),
            ("UNEXPECTED FAILURE", o.unexpected),
            ("STALE baseline entry (now passes)", o.stale),
            ("PROBLEM", o.problems),
        ):
            for item in items:
                print(f"  {name}: {label}: {item}")
        if o.tool_exit not in (0, None) and not (o.unexpected or o.stale or o.problems):
            print(f"  {name}: the tool exited with status {o.tool_exit}")
    for o in outcomes:
        extra = f", {o.warnings} warnings" if o.warnings else ""
        verdict = "ok" if o.ok else "FAILED"
        print(
            f"{o.suite.label}: {o.passed} passed, {o.failed} failed{extra} "
            f"({len(o.expected)} expected by baseline) [{verdict}]"
        )
    print(f"results: {work}")
    total_passed = sum(o.passed for o in outcomes)
    total_failed = sum(len(o.unexpected) + len(o.stale) + len(o.problems) for o in outcomes)
    ok = all(o.ok for o in outcomes)
    if not ok and total_failed == 0:
        total_failed = sum(1 for o in outcomes if not o.ok)
    print(f"conformance: {total_passed} passed, {total_failed} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
