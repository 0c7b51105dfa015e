"""Issue 8 §4: ``mcp-ref check TARGET``, the official schema as a linter, run as the real command."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from conftest import SERVERS, WAIT, run_cli

DEMO = f'"{sys.executable}" -m mcp_ref serve-demo'
BROKEN = f'"{sys.executable}" "{SERVERS / "schema_breaking_server.py"}"'


def check(*args: str) -> tuple[int, dict]:
    proc = run_cli("check", *args, "--json", "--quiet-server", timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def by_status(report: dict, status: str) -> dict[str, str]:
    return {f["check"]: f["detail"] for f in report["findings"] if f["status"] == status}


@pytest.mark.slow
@pytest.mark.parametrize(
    "era, version, first",
    [
        ("auto", "2026-07-28", "server/discover: a protocol version both sides speak"),
        ("handshake", "2025-11-25", "ping answers an empty result"),
    ],
)
def test_the_demo_passes_every_check(era, version, first):
    code, report = check(DEMO, "--era", era)
    assert code == 0 and report["ok"], report
    assert report["counts"]["fail"] == 0 and report["counts"]["warn"] == 0
    checks = {f["check"] for f in report["findings"]}
    for expected in (
        first,
        "tools/list (following every cursor)",
        "an invalid cursor is -32602",
        "resources/read demo://readme",
        "an unknown method is -32601",
        "tools/call without its required params is -32602",
        f"every message from the server matches the {version} schema",
    ):
        assert expected in checks
    assert all(
        f["section"].startswith(f"{version} ") for f in report["findings"]
    )  # each names its spec section


@pytest.mark.slow
def test_call_tools_calls_each_tool_with_schema_valid_arguments():
    code, report = check(DEMO, "--call-tools", "--call-timeout", "0.5")
    assert code == 0, report
    passed = by_status(report, "pass")
    assert (
        "tools/call echo with example arguments" in passed
        and "tools/call divide with example arguments" in passed
    )
    # A tool that needs what this client did not declare is a warning, with the reason.
    warned = by_status(report, "warn")
    assert (
        "{'sampling': {}}" in warned["tools/call ask_llm with example arguments"]
    )  # -32021 names it
    # One that runs on (it waits to be cancelled) is bounded, cancelled, and said so.
    assert "no answer within 0.5 s" in warned["tools/call wait_for_cancel with example arguments"]


def test_a_server_that_breaks_the_spec_is_caught_precisely():
    code, report = check(BROKEN)
    assert code == 5 and not report["ok"]
    failed, warned = by_status(report, "fail"), by_status(report, "warn")
    assert '"result" must be an object' in failed["ping answers an empty result"]
    assert "answered -32603" in failed["an unknown method is -32601"]
    assert "answered with a result" in failed["tools/call without its required params is -32602"]
    assert "no contents" in failed["resources/read 5"]
    schema = failed["every message from the server matches the 2025-11-25 schema"]
    for fault in (
        "/tools/0/inputSchema/type",
        "5 is not of type 'string' at /resources/0/uri",
        "'robot' is not one of",
    ):
        assert fault in schema
    assert "'bad tool!'" in warned["tool names follow the naming guidance"]
    assert "answered with a result" in warned["an invalid cursor is -32602"]  # a SHOULD: a warning


@pytest.mark.parametrize("era", ["auto", "handshake"])
def test_lines_on_stdout_that_are_not_messages_fail_the_check_once_each_quoted_a_few(era):
    # 2025-11-25 basic/transports §stdio: "The server MUST NOT write anything to its stdout that is
    # not a valid MCP message": a FAIL row (exit 5), counted, a few quoted, no traceback anywhere
    stray = f'"{sys.executable}" "{SERVERS / "stray_stdout_server.py"}" 40'
    proc = run_cli("check", stray, "--era", era, "--json", "--quiet-server", timeout=120)
    report = json.loads(proc.stdout)
    assert proc.returncode == 5 and not report["ok"], report
    failed = by_status(report, "fail")
    detail = failed["the server writes nothing but MCP messages to its stdout"]
    assert detail.startswith("40 line(s) that are not a JSON-RPC message: 'Starting server 1...'")
    assert detail.endswith("; ... 37 more") and "Starting server 4..." not in detail
    assert len(failed) == 1, failed  # the schema row is about the messages, and they are fine
    assert "ERROR" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_the_table_reads_as_a_table():
    proc = run_cli("check", BROKEN, "--quiet-server", timeout=120)
    assert proc.returncode == 5
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("PASS  initialize")
    assert any(line.startswith("FAIL  an unknown method is -32601") for line in lines)
    assert lines[-1] == "6 passed, 2 warning(s), 5 failed"


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None, reason="the official MCP Python SDK is not installed"
)
def test_the_official_sdks_server_passes_with_what_it_really_gets_wrong(sdk_streamable):
    # tests/servers/interop_sdk_server.py over Streamable HTTP: one process for the whole run (conftest)
    code, report = check(sdk_streamable.url + "/mcp", "--call-tools")
    assert code == 0, report
    assert report["counts"]["fail"] == 0
    # It accepts an invalid cursor (the spec: SHOULD answer -32602): reported as a warning, precisely.
    assert (
        by_status(report, "warn")["an invalid cursor is -32602"]
        == "answered with a result, not error -32602"
    )


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon", "1e10"])
def test_a_bad_call_timeout_is_one_usage_line_and_nothing_runs(value):
    proc = run_cli("check", DEMO, "--call-tools", "--call-timeout", value, timeout=WAIT * 3)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("mcp-ref: error: argument --call-timeout: ")
    assert line.endswith("(see `mcp-ref check --help`)")
    assert proc.stdout == ""  # no server was started, nothing was checked
