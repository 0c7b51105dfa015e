"""Issue 8 §4: ``mcp-ref check TARGET``, the official schema as a linter, run as the real command."""

from __future__ import annotations

import importlib.util
import io
import json
import sys

import pytest
from conftest import SERVERS, WAIT, run_cli
from http_fixtures import serve  # noqa: F401 - fixture

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
    (row,) = [f for f in report["findings"] if f["detail"] == detail]
    assert row["section"].endswith(("basic/transports §stdio", "basic/transports/stdio"))
    assert detail.startswith("40 line(s) that are not a JSON-RPC message: 'Starting server 1...'")
    assert detail.endswith("; ... 37 more") and "Starting server 4..." not in detail
    assert len(failed) == 1, failed  # the schema row is about the messages, and they are fine
    assert "ERROR" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def answering_unknown_methods_with(content_type: str, body: bytes):
    """WSGI middleware: the POST of a request for a method the demo does not have (``check``'s
    ``mcp-ref/check-no-such-method``) is answered 200 with ``body`` as ``content_type``, as a web
    framework's own page would; every other request reaches the demo."""

    def wrap(app):
        def middleware(environ, start_response):
            if environ["REQUEST_METHOD"] == "POST":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                posted = environ["wsgi.input"].read(length)
                environ["wsgi.input"] = io.BytesIO(posted)
                if b'"mcp-ref/check-no-such-method"' in posted:
                    start_response(
                        "200 OK",
                        [("Content-Type", content_type), ("Content-Length", str(len(body)))],
                    )
                    return [body]
            return app(environ, start_response)

        return middleware

    return wrap


NOT_MESSAGES_ROW = "every response body and SSE event from the server is a JSON-RPC message"
ANSWER_TYPE_ROW = "the server answers each request with application/json or text/event-stream"


@pytest.mark.parametrize(
    "era, content_type, row, section, detail",
    [
        # 2025-11-25 basic/transports §Sending Messages to the Server: "Content-Type:
        # application/json, to return one JSON object" -- a body that is no JSON is no message
        (
            "handshake",
            "application/json",
            NOT_MESSAGES_ROW,
            "2025-11-25 basic/transports §Sending Messages to the Server",
            "1 response body(ies) or SSE event(s) that are not a JSON-RPC message: "
            "'Internal hiccup: the method is not there'",
        ),
        (
            "auto",
            "application/json",
            NOT_MESSAGES_ROW,
            "2026-07-28 basic/transports/streamable-http §Sending Messages",
            "1 response body(ies) or SSE event(s) that are not a JSON-RPC message: "
            "'Internal hiccup: the method is not there'",
        ),
        # ... "the server MUST either return Content-Type: text/event-stream ... or Content-Type:
        # application/json": any other type is a row of its own
        (
            "handshake",
            "text/plain",
            ANSWER_TYPE_ROW,
            "2025-11-25 basic/transports §Sending Messages to the Server",
            "1 answer(s) of another type: 'text/plain' (to mcp-ref/check-no-such-method)",
        ),
        (
            "auto",
            "text/plain; charset=utf-8",
            ANSWER_TYPE_ROW,
            "2026-07-28 basic/transports/streamable-http §Sending Messages",
            "1 answer(s) of another type: 'text/plain; charset=utf-8' "
            "(to mcp-ref/check-no-such-method)",
        ),
    ],
    ids=[
        "no-json-body-handshake",
        "no-json-body-modern",
        "text-plain-handshake",
        "text-plain-modern",
    ],
)
def test_an_http_answer_that_is_not_a_message_fails_a_row_named_for_http(
    serve, era, content_type, row, section, detail
):
    wrap = answering_unknown_methods_with(content_type, b"Internal hiccup: the method is not there")
    served = serve(wrap=wrap)
    proc = run_cli("check", served.mcp, "--era", era, "--json", timeout=120)
    report = json.loads(proc.stdout)
    assert proc.returncode == 5 and not report["ok"], report  # docs/command-line.md: exit 5
    failed = {f["check"]: f for f in report["findings"] if f["status"] == "fail"}
    # the row of its own, and the probe the odd answer broke; every other answer (JSON, and the
    # 202s to notifications) is as the spec says, and nothing is said of a stdout
    assert sorted(failed) == sorted([row, "an unknown method is -32601"]), failed
    assert failed[row]["section"] == section
    assert failed[row]["detail"] == detail
    assert "Traceback" not in proc.stderr, proc.stderr
    # the table says the same, in one row: its check and section, then its detail
    table = run_cli("check", served.mcp, "--era", era, timeout=120)
    assert table.returncode == 5
    lines = table.stdout.splitlines()
    (at,) = [number for number, line in enumerate(lines) if row in line]
    assert lines[at].startswith(f"FAIL  {row}") and lines[at].endswith(section)
    assert lines[at + 1].strip() == detail


def test_an_sse_event_that_is_not_a_message_fails_the_row_of_the_2024_11_05_transport(serve):
    # 2024-11-05 basic/transports §HTTP with SSE: "Server messages are sent as SSE message events,
    # with the message content encoded as JSON in the event data"; its POSTs' replies answer nothing
    # (the demo's "Accepted"), so they are not held against it
    def stray_event_after_the_endpoint(app):
        def middleware(environ, start_response):
            chunks = app(environ, start_response)
            if environ["REQUEST_METHOD"] != "GET":
                return chunks

            def stream():
                for number, chunk in enumerate(chunks):
                    yield chunk
                    if number == 0:  # the endpoint event
                        yield b"event: message\ndata: Starting server...\n\n"

            return stream()

        return middleware

    served = serve(wrap=stray_event_after_the_endpoint)
    code, report = check(served.sse, "--transport", "sse")
    assert code == 5 and not report["ok"], report
    (failed,) = [f for f in report["findings"] if f["status"] == "fail"]
    assert failed == {
        "check": "every SSE event from the server is a JSON-RPC message",
        "status": "fail",
        "section": "2024-11-05 basic/transports §HTTP with SSE",
        "detail": "1 SSE event(s) that are not a JSON-RPC message: 'Starting server...'",
    }


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


STRICT = f'"{sys.executable}" "{SERVERS / "strict_arguments_server.py"}"'


def test_call_tools_warns_when_a_conforming_server_refuses_the_example_arguments():
    """2025-06-18 server/tools §Error Handling: invalid arguments are a protocol error (-32602), or
    an isError result.  A tool that refuses the examples (built from its schema, which cannot say
    every rule) is a warning, not the server's failure; the examples meet enum, minimum, maximum,
    their exclusive forms, minLength, maxLength and a date format; a required string with a
    pattern is not tried (a warning).  A wrong error code (-32603) still fails."""
    code, report = check(STRICT, "--era", "handshake", "--call-tools")
    failed, warned, passed = (by_status(report, s) for s in ("fail", "warn", "pass"))
    assert list(failed) == ["tools/call crash with example arguments"], failed
    assert code == 5
    assert (
        'the example arguments were refused: {"order": "x"}'
        in warned["tools/call find with example arguments"]
    )
    assert "no such order" in warned["tools/call find with example arguments"]
    assert "refused (isError)" in warned["tools/call ship with example arguments"]
    assert "must match a pattern" in warned["tools/call lookup with example arguments"]
    assert "tools/call bounded with example arguments" in passed, warned
    # bounds beyond every float (10**400, a valid JSON number) are met, compared exactly
    assert "tools/call vast with example arguments" in passed, warned


def test_call_tools_gives_one_example_a_budget_across_every_level_and_shows_it_cut():
    """Nested arrays multiply (16 items of 16 items of ... of 1,000 characters, an object between
    them that once started the count of levels again): the whole example has one budget of
    values and characters, and a tool whose example would pass it is not called, a warning.  A
    finding shows the arguments as JSON, cut to about 200 characters."""
    code, report = check(STRICT, "--era", "handshake", "--call-tools")
    warned, passed = by_status(report, "warn"), by_status(report, "pass")
    assert warned["tools/call amplify with example arguments"] == (
        "not called: the example arguments would pass 1,000 values or 64 KiB"
    )
    shown = passed["tools/call long with example arguments"]
    assert shown == 'arguments {"text": "' + "x" * (200 - len('{"text": "')) + "..."
    assert all(len(finding["detail"]) < 1000 for finding in report["findings"]), report


def test_call_tools_does_not_call_a_tool_whose_every_allowed_number_is_too_long_to_write():
    """An exclusive bound of 4,300 digits (the most Python's json reads and writes) allows only
    numbers a digit longer: the tool is not called, a warning.  The command used to end in a
    traceback (ValueError: Exceeds the limit (4300 digits) for integer string conversion)."""
    code, report = check(STRICT, "--era", "handshake", "--call-tools")
    warned = by_status(report, "warn")
    for name in ("brink", "brink_below"):
        assert warned[f"tools/call {name} with example arguments"] == (
            "not called: an example number would have more digits than Python writes as text"
            " (sys.get_int_max_str_digits)"
        )
    assert code == 5  # the crash tool's failure, as before
