"""The ``mcp-ref`` command against the demo server (launched for real: ``python -m mcp_ref serve-demo``).

The command runs in the test's process (``cli.main(ARGS)``, stdout and stderr captured: see
conftest.run_cli); a few tests run it for real, as ``python -m mcp_ref ...``, the ``mcp-ref``
console script or on a pseudo-terminal, where the process is the point.

Exit codes (mcp_ref/workbench/cli.py): 0 ok, 2 usage, 4 cannot launch or reach the
server, 5 the tool returned ``isError`` or the server answered with a JSON-RPC
error.  Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DEMO, MCP_REF_FROM_A_TERMINAL, WAIT, check_trace, run_cli, run_cli_process
from http_fixtures import serve  # noqa: F401 - fixture

from mcp_ref import Client, __version__

TARGET = f'"{sys.executable}" -m mcp_ref serve-demo'
RUN_TIMEOUT = 60  # seconds for one whole CLI run


def cli(*args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    """Run ``mcp-ref ARGS`` in this process; whatever happens, no traceback on stderr."""
    return run_cli(*args, timeout=timeout)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mcp-ref: ")
    return lines[0]


@pytest.fixture(scope="module")
def direct():
    """A Client on its own demo server, for the raw results the CLI's --json must match."""
    with Client.stdio(DEMO, stderr="capture", timeout=WAIT) as client:
        yield client


# -- verbs ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_info():
    proc = cli("info", TARGET)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "server:       mcp-ref-demo 1.0.0 (mcp_ref demo server)" in out
    assert "protocol:     2026-07-28" in out
    assert "era:          modern (no session; server/discover lists 2026-07-28, 2025-11-25" in out
    assert "capabilities: completions, extensions, logging, prompts, resources, tools" in out
    assert '  extensions: {"io.modelcontextprotocol/tasks": {}}' in out
    assert (
        '  resources: {"subscribe": true, "listChanged": true}' in out
    )  # delivered on subscriptions/listen
    handshake = cli("info", "--era", "handshake", TARGET)
    assert handshake.returncode == 0, handshake.stderr
    assert (
        "protocol:     2025-11-25" in handshake.stdout
        and "era:          handshake (initialize)" in handshake.stdout
    )
    assert '  resources: {"subscribe": true, "listChanged": true}' in handshake.stdout
    assert "instructions: A demo of every MCP feature. Start with the echo tool." in out


@pytest.mark.slow
def test_tools_lists_every_page(direct):
    proc = cli("tools", TARGET)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # The demo pages its tools 5 at a time: the CLI followed the cursor to the end.
    assert [line.split("(")[0] for line in lines] == [t.name for t in direct.list_tools()]
    assert len(lines) > 5
    assert lines[0] == "echo(text: string)  Return the text unchanged."
    assert "add(a: number, b: number)  Add two numbers." in lines


@pytest.mark.slow
def test_resources_templates_prompts():
    proc = cli("resources", TARGET)
    assert proc.returncode == 0
    assert "demo://readme  readme (text/markdown)" in proc.stdout.splitlines()
    assert "demo://pixel.png  pixel_png (image/png)" in proc.stdout.splitlines()
    proc = cli("templates", TARGET)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ["demo://greeting/{name}  greeting"]
    proc = cli("prompts", TARGET)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [
        "greet(name, style?)  A greeting in a chosen style.",
        "review(code)  Ask for a code review, with the readme attached.",
    ]


@pytest.mark.slow
def test_call_echo():
    proc = cli("call", TARGET, "echo", "text=hello")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "hello\n", "")


@pytest.mark.slow
def test_call_coerces_values_that_are_json():
    proc = cli("call", TARGET, "add", "a=1", "b=2")
    assert (proc.returncode, proc.stdout) == (0, "3\n")
    proc = cli("call", TARGET, "add", "a=1.5", "b=-2")
    assert (proc.returncode, proc.stdout) == (0, "-0.5\n")


@pytest.mark.slow
def test_call_keeps_values_that_are_not_json_as_strings():
    proc = cli(
        "call",
        TARGET,
        "echo",
        "text=[1,",
    )
    assert (proc.returncode, proc.stdout) == (0, "[1,\n")
    proc = cli("call", TARGET, "echo", "text=hello world=yes")  # only the first "=" splits
    assert (proc.returncode, proc.stdout) == (0, "hello world=yes\n")
    proc = cli("--json", "call", TARGET, "echo", 'text="42"')  # a JSON string stays a string
    assert json.loads(proc.stdout)["content"][0]["text"] == "42"


@pytest.mark.slow
def test_call_with_args_json():
    proc = cli("call", TARGET, "add", "--args", '{"a": 1, "b": 2}')
    assert (proc.returncode, proc.stdout) == (0, "3\n")
    proc = cli("call", TARGET, "add", "b=40", "--args", '{"a": 1, "b": 2}')  # pairs override --args
    assert (proc.returncode, proc.stdout) == (0, "41\n")
    proc = cli(
        "call", TARGET, "add", "--args", '{"a": 1, "b": 2}', "b=40"
    )  # also when they come after it
    assert (proc.returncode, proc.stdout) == (0, "41\n")
    proc = cli("call", TARGET, "add", "--args", '{"a": 1}', "--bogus")
    assert proc.returncode == 2 and "unknown option --bogus" in proc.stderr


@pytest.mark.slow
def test_call_structured_output_and_image():
    proc = cli("--json", "call", TARGET, "weather", "city=Lisbon")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["structuredContent"] == {
        "city": "Lisbon",
        "temperature": 21.5,
        "unit": "celsius",
        "conditions": "sunny",
    }
    proc = cli("call", TARGET, "pixel")
    assert proc.returncode == 0 and proc.stdout.startswith("[image image/png, ")


@pytest.mark.slow
def test_read():
    proc = cli("read", TARGET, "demo://readme")
    assert proc.returncode == 0
    assert proc.stdout == "# mcp_ref demo\n\nEvery MCP feature, one small example each.\n"
    proc = cli("read", TARGET, "demo://greeting/Ada")
    assert (proc.returncode, proc.stdout) == (0, "Hello, Ada!\n")
    proc = cli("read", TARGET, "demo://pixel.png")
    assert proc.returncode == 0 and proc.stdout.startswith("[blob image/png, ")


@pytest.mark.slow
def test_prompt():
    proc = cli("prompt", TARGET, "greet", "name=Ada")
    assert (proc.returncode, proc.stdout) == (0, "[user] Hey Ada!\n")
    proc = cli("prompt", TARGET, "greet", "name=Ada", "style=formal")
    assert (proc.returncode, proc.stdout) == (0, "[user] Good day, Ada.\n")
    proc = cli("prompt", TARGET, "greet", "name=123")  # prompt arguments are strings, never coerced
    assert (proc.returncode, proc.stdout) == (0, "[user] Hey 123!\n")


# -- --json --------------------------------------------------------------------------------------


def _all_pages(client: Client, method: str, key: str) -> list:
    items, cursor = [], None
    while True:
        raw = client.request(method, {"cursor": cursor} if cursor else None)
        items += raw[key]
        cursor = raw.get("nextCursor")
        if not cursor:
            return items


@pytest.mark.slow
def test_json_outputs_equal_the_raw_results(direct):
    def as_json(*args):
        proc = cli("--json", *args)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    # the 2026-07-28 era: no initialize; protocolVersion added, the version negotiated
    assert as_json("info", TARGET) == {
        **direct.discover_result.raw,
        "protocolVersion": "2026-07-28",
    }
    assert (
        as_json("call", TARGET, "add", "a=1", "b=2")
        == direct.call_tool("add", {"a": 1, "b": 2}).raw
    )
    assert as_json("read", TARGET, "demo://readme") == direct.read_resource("demo://readme").raw
    assert (
        as_json("read", TARGET, "demo://pixel.png") == direct.read_resource("demo://pixel.png").raw
    )
    assert (
        as_json("prompt", TARGET, "greet", "name=Ada")
        == direct.get_prompt("greet", {"name": "Ada"}).raw
    )
    assert as_json("tools", TARGET) == {"tools": _all_pages(direct, "tools/list", "tools")}
    assert as_json("resources", TARGET) == {
        "resources": _all_pages(direct, "resources/list", "resources")
    }
    assert as_json("templates", TARGET) == {
        "resourceTemplates": _all_pages(direct, "resources/templates/list", "resourceTemplates")
    }
    assert as_json("prompts", TARGET) == {"prompts": _all_pages(direct, "prompts/list", "prompts")}


@pytest.mark.slow
def test_json_of_a_tool_error_is_the_raw_result_and_exits_5():
    proc = cli("--json", "call", TARGET, "divide", "a=1", "b=0")
    assert proc.returncode == 5
    result = json.loads(
        proc.stdout
    )  # as received: in the 2026-07-28 era with resultType and the server's _meta
    assert {k: result[k] for k in ("content", "isError", "resultType")} == {
        "content": [{"type": "text", "text": "Cannot divide by zero"}],
        "isError": True,
        "resultType": "complete",
    }


# -- --trace -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_trace_shows_every_message_and_each_is_schema_valid():
    proc = cli("--trace", "call", TARGET, "echo", "text=traced")
    assert proc.returncode == 0
    assert proc.stdout == "traced\n"  # the trace goes to stderr only
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith(("--> {", "<-- {")) for line in lines), proc.stderr
    checker = check_trace(proc.stderr)
    assert checker.modern_version == "2026-07-28"
    assert [m["method"] for m in checker.sent() if "method" in m] == [
        "server/discover",
        "tools/call",
    ]
    assert checker.received()[-1]["result"]["content"] == [{"type": "text", "text": "traced"}]
    checker.assert_valid()


@pytest.mark.slow
def test_trace_demo_is_schema_valid_end_to_end():
    """The acceptance criterion: ``mcp-ref --trace demo`` exits 0 and every traced message is valid."""
    proc = run_cli_process(
        "--trace", "demo", timeout=120
    )  # the real command, as the README shows it
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Every step behaved" in proc.stdout
    assert "FAIL" not in proc.stdout
    checker = check_trace(proc.stderr)
    assert checker.version == "2025-11-25"
    methods = {m.get("method") for _, m in checker.messages if isinstance(m, dict)}
    for method in (
        "initialize",
        "tools/call",
        "notifications/progress",
        "notifications/cancelled",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "resources/subscribe",
        "notifications/resources/updated",
        "completion/complete",
        "notifications/message",
        # the 2026-07-28 tour, first
        "server/discover",
        "subscriptions/listen",
        "notifications/subscriptions/acknowledged",
        "tasks/get",
    ):
        assert method in methods, method
    assert checker.modern_version == "2026-07-28"
    results = [
        m["result"]
        for _, m in checker.messages
        if isinstance(m, dict) and isinstance(m.get("result"), dict)
    ]
    kinds = {r.get("resultType") for r in results}
    assert {"input_required", "task", "complete"} <= kinds  # an MRTR round trip and a task
    assert any(r.get("ttlMs") == 3_600_000 for r in results)  # the cache hints
    checker.assert_valid()
    # Readable: the 200 echo calls of eight threads are summarised, not printed one by one.
    summaries = [line for line in proc.stderr.splitlines() if line.startswith("... ")]
    assert summaries and sum(int(line.split()[1]) for line in summaries) >= 300
    assert len(checker.messages) < 400


#: A server whose tool takes a password, whose resource's URI holds credentials, and which (run as
#: a script) first writes a line that is no JSON, holding a bearer token, on its stdout.
SECRETS_SERVER = """
from mcp_ref import Server

server = Server("secrets")


@server.tool()
def login(user: str, password: str) -> str:
    "Log in."
    return "welcome " + user


@server.resource("https://ann:s3cret@example.com/x?token=T0K3N")
def private() -> str:
    "A private page."
    return "private page"


if __name__ == "__main__":
    print("no JSON: Authorization: Bearer eyJhbGciOiJIUzI1NiJ9 api_key=sk-live-42", flush=True)
    server.run_stdio()
"""


@pytest.mark.slow
def test_trace_masks_a_password_argument_on_both_sides(tmp_path):
    """``--trace`` printed each message raw: ``password=hunter2`` reached stderr (and any log it is
    piped into) in the client's trace and in a ``run --trace`` server's.  Now the value is masked
    as the inspector masks it; the call is shown otherwise as before."""
    (tmp_path / "secrets.py").write_text(SECRETS_SERVER)
    target = f'"{sys.executable}" -m mcp_ref --trace run "{tmp_path / "secrets.py"}"'
    proc = run_cli_process("--trace", "call", target, "login", "user=ann", "password=hunter2")
    assert (proc.returncode, proc.stdout) == (0, "welcome ann\n"), proc.stderr
    assert "hunter2" not in proc.stderr
    calls = [line for line in proc.stderr.splitlines() if '"tools/call"' in line]
    assert [line[:4] for line in calls] == ["--> ", "<-- "], proc.stderr  # client's, server's
    for line in calls:
        assert json.loads(line[4:])["params"]["arguments"] == {"user": "ann", "password": "••••••"}


@pytest.mark.slow
def test_trace_masks_credentials_in_uris_and_in_lines_that_are_no_json(tmp_path):
    """A resource URI's userinfo and ``token`` query value, and a bearer token and an API key in a
    line the server wrote that is no JSON, were printed as they came.  Now each is masked."""
    (tmp_path / "secrets.py").write_text(SECRETS_SERVER)
    target = f'"{sys.executable}" "{tmp_path / "secrets.py"}"'
    uri = "https://ann:s3cret@example.com/x?token=T0K3N"
    proc = run_cli_process("--trace", "read", target, uri)
    assert (proc.returncode, proc.stdout) == (0, "private page\n"), proc.stderr
    for secret in ("s3cret", "T0K3N", "eyJhbGciOiJIUzI1NiJ9", "sk-live-42"):
        assert secret not in proc.stderr, secret
    assert "<-- no JSON: Authorization: Bearer ••••••" in proc.stderr
    reads = [line for line in proc.stderr.splitlines() if '"resources/read"' in line]
    assert len(reads) == 1, proc.stderr
    assert json.loads(reads[0][4:])["params"]["uri"] == "https://••••••@example.com/x?token=••••••"


def test_version():
    proc = cli("--version")
    assert (proc.returncode, proc.stdout.strip()) == (0, f"mcp-ref {__version__}")


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["python -m mcp_ref", "mcp-ref"])
def test_the_real_command_exits_with_mains_code(launcher):
    """``python -m mcp_ref`` and the console script (setup.cfg: ``mcp_ref.workbench.cli:main``) exit with
    what main() returns: 0, 1 (usage), 4 (cannot launch), 5 (a tool error)."""
    import shutil

    if launcher == "mcp-ref":
        if shutil.which("mcp-ref") is None:
            pytest.skip("the mcp-ref console script is not installed (pip install -e .)")
        command = ["mcp-ref"]
    else:
        command = [sys.executable, "-m", "mcp_ref"]

    def run(*args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [*command, *args], capture_output=True, text=True, timeout=RUN_TIMEOUT
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    version = run("--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"mcp-ref {__version__}")
    assert run("frobnicate").returncode == 2
    assert run("info", "no-such-command-for-mcp-ref-tests").returncode == 4
    failed = run("call", TARGET, "divide", "a=1", "b=0")
    assert (failed.returncode, failed.stdout) == (5, "Cannot divide by zero\n")
    assert failed.stderr == "mcp-ref: tool divide returned an error\n"


@pytest.mark.slow
def test_main_leaves_nothing_behind_between_runs():
    """In one process, run after run: no logging handler left on the root logger, its level as it was,
    and no thread of the command still running (each run has its own stdin reader)."""
    import logging
    import threading

    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    for _ in range(2):
        assert cli("--trace", "call", TARGET, "echo", "text=again").stdout == "again\n"
        assert (
            cli("--yes", "call", TARGET, "ask_user").returncode == 0
        )  # reads stdin: end of input, cancelled
    assert (list(root.handlers), root.level) == before
    for thread in threading.enumerate():
        if thread.name == "mcp-ref-stdin":  # each read its end of input, and ends
            thread.join(WAIT)
            assert not thread.is_alive()


# -- exit codes and errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["frobnicate"],  # unknown verb
        [],  # no verb
        ["info"],  # missing TARGET
        ["--timeout", "soon", "info", TARGET],
    ],
)
def test_usage_errors_exit_2(args):
    proc = cli(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1].startswith("mcp-ref: error: ")


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (["call", TARGET, "echo", "textonly"], "mcp-ref: expected KEY=VALUE, got 'textonly'"),
        (["call", TARGET, "echo", "=x"], "mcp-ref: expected KEY=VALUE, got '=x'"),
        (["call", TARGET, "echo", "--args", "[1]"], "mcp-ref: --args must be a JSON object"),
        (["prompt", TARGET, "greet", "name"], "mcp-ref: expected KEY=VALUE, got 'name'"),
        (["info", ""], "mcp-ref: error: TARGET is empty (see `mcp-ref info --help`)"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, message):
    proc = cli(*args)
    assert proc.returncode == 2
    assert one_error_line(proc) == message


def test_command_that_does_not_exist_exits_4():
    proc = cli("call", "no-such-command-for-mcp-ref-tests", "echo", "text=x")
    assert proc.returncode == 4
    assert "command not found" in one_error_line(proc)
    assert "did you mean" not in proc.stderr


def test_a_logout_whose_token_store_cannot_be_changed_is_one_line(tmp_path, monkeypatch):
    """``logout`` when the token store cannot be written (its lock file cannot be opened, or
    another process holds the lock past its wait): one line naming the store, exit 2, the tokens
    kept.  It ended in a traceback."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    store = tmp_path / "mcp-ref" / "tokens.json"
    store.parent.mkdir()
    store.write_text('{"tokens http://127.0.0.1:9/mcp": {"access_token": "t"}}', encoding="utf-8")
    (tmp_path / "mcp-ref" / "tokens.json.lock").mkdir()  # a lock file no one can open
    proc = cli("logout", "http://127.0.0.1:9/mcp")
    assert proc.returncode == 2
    assert one_error_line(proc).startswith(f"mcp-ref: cannot forget the authorization in {store}: ")
    assert "access_token" in store.read_text(encoding="utf-8")


@pytest.mark.parametrize("target", ["localhost:8000/mcp", "127.0.0.1:8000"])
def test_a_url_without_its_scheme_is_named_as_one(target):
    """A TARGET is a URL only with http(s)://: one that looks like host:port says so."""
    proc = cli("tools", target)
    assert proc.returncode == 4
    assert one_error_line(proc) == (
        f"mcp-ref: cannot launch {target!r}: command not found (a URL starts with http:// or "
        f"https://: did you mean http://{target}?)"
    )


@pytest.mark.parametrize("code", ["pass", "import sys; sys.exit(3)"])
def test_server_that_exits_immediately_exits_4(code):
    proc = cli("info", f'"{sys.executable}" -c "{code}"')
    assert proc.returncode == 4
    line = one_error_line(proc)
    assert "did not complete the handshake" in line and "exited with status" in line


def test_server_that_writes_garbage_and_exits_exits_4():
    proc = cli("info", f'"{sys.executable}" -c "print(\'not json at all\')"')
    assert proc.returncode == 4
    # A warning about the unparsable line may come first; the error is the last line.
    lines = proc.stderr.strip().splitlines()
    assert (
        lines[-1].startswith("mcp-ref: the server")
        and "did not complete the handshake" in lines[-1]
    )
    assert all(line.startswith("mcp-ref: ") for line in lines)


@pytest.mark.slow
def test_tool_error_exits_5():
    proc = cli("call", TARGET, "divide", "a=1", "b=0")
    assert proc.returncode == 5
    assert proc.stdout == "Cannot divide by zero\n"
    assert one_error_line(proc) == "mcp-ref: tool divide returned an error"


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, text",
    [
        (["call", TARGET, "no_such_tool"], "(code -32602)"),
        (["read", TARGET, "demo://nowhere"], "(code -32602)"),  # 2026-07-28: -32602 with data.uri
        (["prompt", TARGET, "no_such_prompt"], "(code -32602)"),
        (["prompt", TARGET, "greet"], "missing required argument"),
    ],
)
def test_json_rpc_errors_exit_5(args, text):
    proc = cli(*args)
    assert proc.returncode == 5
    assert proc.stdout == ""
    line = one_error_line(proc)
    assert line.startswith("mcp-ref: the server answered with an error: ") and text in line


@pytest.mark.slow
def test_request_timeout_exits_6():
    proc = cli("--timeout", "0.5", "call", TARGET, "wait_for_cancel")
    assert proc.returncode == 6
    one_error_line(proc)


#: A server whose tool says its pid on stderr, then works for ten minutes.
SLOW_TOOL_SERVER = """
import os, sys, time
from mcp_ref import Server

server = Server("slow")


@server.tool()
def slow() -> str:
    \"\"\"Work for ten minutes.\"\"\"
    print("working", os.getpid(), file=sys.stderr, flush=True)
    time.sleep(600)
    return "done"


server.run()
"""


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", ["SIGTERM", "SIGHUP"])
def test_a_command_stopped_by_sigterm_or_sighup_stops_its_server(tmp_path, stop_signal):
    """``kill PID`` (SIGTERM) or a closed terminal (SIGHUP) while a tool runs: the command closes
    the server it launched (stdin closed, then SIGTERM, then SIGKILL) before it exits.  It died
    at once, and the server, busy with the call, ran on for its ten minutes."""
    from test_http_deploy import LineReader

    (tmp_path / "slow.py").write_text(SLOW_TOOL_SERVER, encoding="utf-8")
    proc = subprocess.Popen(
        [*MCP_REF_FROM_A_TERMINAL, "call", "slow", "--", sys.executable, "slow.py"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    errors = LineReader(proc.stderr)
    server = int(errors.wait_for(r"^working (\d+)").group(1))
    try:
        proc.send_signal(getattr(signal, stop_signal))
        proc.wait(timeout=WAIT)
        assert not Path(f"/proc/{server}").exists()  # reaped by the command: gone
        assert "Traceback" not in "".join(errors.all)
    finally:
        proc.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(server, signal.SIGKILL)


# -- issue 8: one line, never a traceback ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("serve-demo", "--stateless"),
        ("serve-demo", "--auth"),
        ("serve-demo", "--http", "foo"),
        ("serve-demo", "--http", "127.0.0.1:99999"),
    ],
    ids=["stateless-without-http", "auth-without-http", "not-host-port", "port-out-of-range"],
)
def test_serve_demo_usage_errors_are_one_line(args):
    proc = cli(*args)
    assert proc.returncode == 2
    assert "--" in one_error_line(proc)


def test_serve_demo_on_a_port_in_use_is_one_line():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = cli("serve-demo", "--http", f"127.0.0.1:{taken.getsockname()[1]}")
    assert proc.returncode == 4
    assert "cannot listen on" in one_error_line(proc)


@pytest.mark.slow
@pytest.mark.parametrize(
    "words, first",
    [(f"tools '{TARGET}'", "echo(text: string)"), ("demo", "mcp_ref demo: a client")],
)
def test_output_cut_short_by_head_is_not_an_error(words, first):
    """``mcp-ref tools TARGET | head -1``: the reader leaves early; no BrokenPipeError, exit 0.
    ``mcp-ref demo | head -1`` said "the demo could not run its server: [Errno 32] Broken pipe",
    exit 4."""
    proc = subprocess.run(
        f"{sys.executable} -m mcp_ref {words} | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.stdout.startswith(first) and len(proc.stdout.splitlines()) == 1
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 0


def test_a_server_that_cannot_be_reached_is_said_so(tmp_path):
    from http_fixtures import free_port

    proc = cli("info", f"http://127.0.0.1:{free_port()}/mcp")
    assert proc.returncode == 4
    line = one_error_line(proc)
    assert "cannot reach" in line and "connection refused" in line and "initialize" not in line


@pytest.mark.slow
def test_demo_runs_from_a_folder_holding_a_shadowing_mcp_ref(tmp_path):
    """Run from the folder that contains a clone named mcp_ref: the demo's server must not import the clone folder."""
    (
        tmp_path / "mcp_ref"
    ).mkdir()  # what a clone looks like from its parent: a folder, no __init__.py
    script = "import sys; sys.argv = ['mcp-ref', 'demo']; from mcp_ref.workbench.cli import main; sys.exit(main())"
    from pathlib import Path

    import mcp_ref

    home = str(Path(mcp_ref.__file__).resolve().parent.parent)
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {home!r}); {script}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Every step behaved" in proc.stdout


# -- issue 8: a CLI for scripting -----------------------------------------------------------------------


@pytest.mark.slow
def test_global_options_also_work_after_the_verb():
    proc = cli("call", TARGET, "echo", "text=hi", "--json", "--timeout", "30")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"][0]["text"] == "hi"


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(value):
    proc = cli("--timeout", value, "tools", TARGET)
    assert proc.returncode == 2 and "--timeout" in proc.stderr


@pytest.mark.parametrize(
    "args, said",
    [
        # past what a lock's wait can hold (threading.TIMEOUT_MAX): once an OverflowError
        (["--timeout", "1e10", "tools", TARGET], "argument --timeout: must be at most 31536000"),
        (["tools", TARGET, "--connect-timeout", "1e10"], "argument --connect-timeout: must be"),
        (["--answer-timeout", "1e10", "tools", TARGET], "argument --answer-timeout: must be"),
        (["inspect", "--port", "99999", "--no-browser", TARGET], "argument --port: must be a port"),
        (["inspect", "--port", "-1", "--no-browser", TARGET], "argument --port: must be a port"),
        # a quote that does not close: once shlex's ValueError
        (
            ["tools", "python 'server.py"],
            "TARGET cannot be split into words (no closing quotation)",
        ),
        (["install", "python 'server.py", "--print"], "TARGET cannot be split into words"),
        (["proxy", "python 'server.py", "--http", "127.0.0.1:0"], "TARGET cannot be split"),
        (["--sampling-command", "cat 'x", "tools", TARGET], "--sampling-command cannot be split"),
        (["tools", "python server.py\\"], "TARGET cannot be split into words (no escaped"),
    ],
)
def test_values_the_command_cannot_use_are_one_usage_line(args, said):
    """A command line that is wrong gets one line and exit 2, never a traceback."""
    proc = cli(*args)
    assert proc.returncode == 2
    assert said in one_error_line(proc)
    assert proc.stdout == ""


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, said",
    [
        (["a=1e999", "b=1"], "a=1e999: 1e999 is too large for a JSON number (a double)"),
        (["a=NaN", "b=1"], "a=NaN: NaN is no JSON value (RFC 8259 §6: no NaN or Infinity)"),
        (["a=[1, -Infinity]", "b=1"], "a=[1, -Infinity]: -Infinity is no JSON value"),
        (["--args", '{"a": Infinity, "b": 1}'], "--args is not valid JSON: Infinity is no JSON"),
    ],
)
def test_numbers_json_cannot_carry_are_one_usage_line(args, said):
    """Python's JSON parser takes NaN, Infinity and 1e999 (as inf); no request could carry them."""
    proc = cli("call", TARGET, "add", *args)
    assert proc.returncode == 2
    assert said in one_error_line(proc)


@pytest.mark.slow
def test_nan_for_a_string_parameter_is_the_text():
    proc = cli("call", TARGET, "echo", "text=NaN")
    assert (proc.returncode, proc.stdout) == (0, "NaN\n"), proc.stderr


@pytest.mark.slow
def test_a_request_that_times_out_has_its_own_exit_code():
    proc = cli("call", TARGET, "wait_for_cancel", "--timeout", "0.5")
    assert proc.returncode == 6
    assert "no answer within" in one_error_line(proc)


@pytest.mark.slow
def test_json_errors_are_json_too():
    proc = cli("--json", "call", TARGET, "no_such_tool")
    assert proc.returncode == 5
    assert json.loads(proc.stdout) == {
        "error": {"code": -32602, "message": "Unknown tool: no_such_tool"},
        "exitCode": 5,
    }
    proc = cli(
        "--json", "call", TARGET, "divide", "a=1", "b=0"
    )  # an isError result: the result itself, isError true
    assert proc.returncode == 5 and json.loads(proc.stdout)["isError"] is True


@pytest.mark.slow
def test_key_value_pairs_follow_the_input_schema():
    proc = cli("--json", "call", TARGET, "echo", "text=123")
    assert (
        json.loads(proc.stdout)["content"][0]["text"] == "123"
    )  # a string parameter: the string "123"
    proc = cli("--json", "call", TARGET, "add", "a=2", "b=0.5")
    assert json.loads(proc.stdout)["structuredContent"] == {"result": 2.5}  # numbers stay numbers


@pytest.mark.slow
def test_tools_marks_optional_parameters():
    out = cli("tools", TARGET).stdout  # an optional parameter: its default, or without one "?"
    assert (
        'weather(city: string, unit: "celsius"|"fahrenheit" = "celsius")' in out
        and "(seconds: number = 30.0)" in out
    )


@pytest.mark.slow
def test_long_calls_report_progress_unless_quiet():
    proc = cli("call", TARGET, "count_slowly", "steps=3", "delay=0.01")
    assert [line for line in proc.stderr.splitlines() if "progress" in line] == [
        "mcp-ref: progress 1/3 step 1 of 3",
        "mcp-ref: progress 2/3 step 2 of 3",
        "mcp-ref: progress 3/3 step 3 of 3",
    ]
    assert proc.stdout.strip() == "counted to 3"
    assert (
        "progress"
        not in cli("call", TARGET, "count_slowly", "steps=3", "delay=0.01", "--quiet").stderr
    )


def test_a_server_that_exits_before_answering_is_explained():
    server = f'"{sys.executable}" -c "import sys; print(\'boom: no config\', file=sys.stderr); sys.exit(3)"'
    proc = cli("tools", server, "--quiet-server")
    assert proc.returncode == 4
    assert "exited with status 3" in proc.stderr and "boom: no config" in proc.stderr
    assert proc.stderr.count("boom: no config") == 1  # hidden while it ran, shown once to explain


@pytest.mark.slow
def test_a_url_that_answers_404_gets_a_hint(serve):
    srv = serve(stateless=True)
    proc = cli("tools", srv.url + "/")
    assert proc.returncode == 4
    assert "/mcp" in one_error_line(proc) and "404" in proc.stderr


# -- issue 8: the CLI as a full client ----------------------------------------------------------------


@pytest.mark.slow
def test_roots_and_a_sampling_command_make_the_cli_a_full_client(tmp_path):
    proc = cli("call", TARGET, "show_roots", "--root", str(tmp_path))
    assert proc.returncode == 0 and tmp_path.resolve().as_uri() in proc.stdout
    upper = f'"{sys.executable}" -c "import sys; print(sys.stdin.read().upper())"'
    proc = cli(
        "call", TARGET, "ask_llm", "question=hi", "--sampling-command", upper, "--yes"
    )  # no terminal to ask on
    assert proc.returncode == 0, proc.stderr
    assert (
        "[SYSTEM] ANSWER BRIEFLY." in proc.stdout and "[USER] HI" in proc.stdout
    )  # the conversation went through the command


@pytest.mark.slow
def test_a_tool_needing_an_undeclared_capability_is_explained_in_one_line():
    # 2026-07-28: the server refuses the request with -32021 MissingRequiredClientCapability.
    proc = cli("call", TARGET, "ask_llm", "question=hi")
    assert proc.returncode == 5
    assert one_error_line(proc) == (
        "mcp-ref: the server answered with an error: Missing required client capability: "
        "sampling/createMessage: the client did not declare the sampling capability "
        "(code -32021)"
    )
    # The handshake era: the tool itself fails, and says why.
    proc = cli("call", "--era", "handshake", TARGET, "ask_llm", "question=hi")
    assert proc.returncode == 5
    assert proc.stdout.strip() == (
        "Tool ask_llm cannot run for this client: sampling/createMessage: "
        "the client did not declare the sampling capability"
    )
    assert "Traceback" not in proc.stderr


def _terminal_session(args: list[str], answers: list[tuple[str, str]]) -> str:
    """Run the CLI on a pseudo-terminal; for each (prompt, reply), wait for prompt and type reply."""
    import os
    import pty
    import select
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_ref", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    seen = b""
    mark = 0  # where to look for the next prompt: after the last one answered
    deadline = time.monotonic() + RUN_TIMEOUT
    pending = list(answers)
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the other end closed: the program has ended
                break
            if not chunk:
                break
            seen += chunk
            if pending and pending[0][0].encode() in seen[mark:]:
                mark = len(seen)
                os.write(master, pending.pop(0)[1].encode() + b"\n")
        proc.wait(WAIT)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return seen.decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_elicitation_is_answered_at_the_terminal_and_checked():
    out = _terminal_session(
        ["call", TARGET, "ask_user"],
        [
            (
                "Allow? [y/N] ",
                "y",
            ),  # the request is shown and approved first (tests/workbench/test_cli_approval.py)
            ("Name (string), or !decline: ", "Ada"),
            (
                'colour (red/green/blue) ["blue"], or !decline: ',
                "purple",
            ),  # not one of the choices: asked again
            ('colour (red/green/blue) ["blue"], or !decline: ', "green"),
        ],
    )
    assert "the server asks: Who are you?" in out
    assert "must be one of" in out
    assert "hello Ada, who likes green" in out


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_an_unanswered_terminal_question_times_out_with_a_clear_message():
    # Issue 20 (9a): a question on the terminal waits --answer-timeout seconds, not for ever.
    out = _terminal_session(
        ["call", "--answer-timeout", "0.5", TARGET, "ask_user"],
        [
            ("Allow? [y/N] ", "y"),
            ("Name (string), or !decline: ", "Ada"),  # then nobody answers the colour
        ],
    )
    assert "no answer within 0.5 s (--answer-timeout): the request is cancelled" in out
    assert "the user chose to cancel" in out
    out = _terminal_session(
        ["call", "--answer-timeout", "0.5", TARGET, "ask_user"], []
    )  # nobody approves
    assert (
        "no answer within 0.5 s (--answer-timeout): refused the server's elicitation request" in out
    )
    assert "the user chose to decline" in out


# -- issue 8: a picture of the conversation -------------------------------------------------------------


@pytest.mark.slow
def test_diagram_draws_the_conversation_as_mermaid(tmp_path):
    out = tmp_path / "call.md"
    proc = cli("call", TARGET, "count_slowly", "steps=5", "delay=0.01", "--diagram", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.startswith("# mcp-ref call ") and "```mermaid\nsequenceDiagram\n" in text
    arrows = [
        line.strip()
        for line in text.splitlines()
        if line.startswith("    ") and "participant" not in line
    ]
    assert arrows[:2] == [
        "C->>S: server/discover #1",
        "S-->>C: #1 server/discover result",
    ]  # no handshake
    call = next(i for i, a in enumerate(arrows) if a.startswith("C->>S: tools/call count_slowly #"))
    assert (
        arrows[call + 1 : call + 4] == ["S--)C: notifications/progress"] * 3
    )  # notifications: dashed, open
    assert arrows[call + 4] == "Note over C,S: ... 2 more message(s) like those above"
    assert arrows[call + 5].startswith("S-->>C: #") and arrows[call + 5].endswith(
        "tools/call result"
    )
    assert "step 1 of 5" not in text  # payloads are elided


@pytest.mark.slow
def test_diagram_masks_secrets_in_its_title_and_its_labels(tmp_path):
    """``--diagram`` wrote its title from the command line as typed (``password=hunter2``, a
    server's ``--api-key``) and a ``resources/read`` arrow's URI as sent, cut to 32 characters
    (``https://ann:s3cret@example.com/…``).  Now both are masked as ``--trace`` masks them,
    before a label is cut; the file holds neither secret."""
    (tmp_path / "secrets.py").write_text(SECRETS_SERVER)
    target = f'"{sys.executable}" "{tmp_path / "secrets.py"}"'
    called = tmp_path / "call.md"
    proc = run_cli_process(
        "--diagram", str(called), "call", target, "login", "user=ann", "password=hunter2"
    )
    assert (proc.returncode, proc.stdout) == (0, "welcome ann\n"), proc.stderr
    text = called.read_text()
    assert "hunter2" not in text
    assert text.splitlines()[0].endswith(" login user=ann password=••••••"), text
    read = tmp_path / "read.md"
    uri = "https://ann:s3cret@example.com/x?token=T0K3N"
    server = [sys.executable, str(tmp_path / "secrets.py"), "--api-key", "K3Y", "--token=T0K"]
    proc = run_cli_process("--diagram", str(read), "read", uri, "--", *server)
    assert (proc.returncode, proc.stdout) == (0, "private page\n"), proc.stderr
    text = read.read_text()
    for secret in ("s3cret", "T0K3N", "K3Y", "T0K"):
        assert secret not in text, secret
    assert "https://••••••@example.com/x?token=••••••" in text.splitlines()[0]
    assert "C->>S: resources/read https://••••••@example.com/x?to… #" in text


def test_a_label_masked_again_is_the_same_label():
    """The inspector labels its rows (``subject_label``) from messages masked already: masking a
    masked URI, argument or text again leaves it as it is."""
    from mcp_ref.workbench.diagram import masked, subject_label

    for text in (
        "https://ann:s3cret@example.com/x?token=T0K3N#access_token=A",
        "password=hunter 2",
        "API_KEY=sk-1 python server.py",
        "run with Bearer eyJhbGciOiJIUzI1NiJ9 and https://u:p@h/ x",
        "python s.py -v --api-key K3Y --password 'a b' -- --x",
        "echo",
    ):
        once = masked(text)
        assert masked(once) == once, text
        for key in ("name", "uri"):
            label = subject_label({"params": {key: text}})
            assert subject_label({"params": {key: once}}) == label
    assert masked("password=hunter 2") == "password=••••••"
    assert masked("python s.py -v --api-key K3Y --password 'a b' -- --x") == (
        "python s.py -v --api-key •••••• --password •••••• -- --x"
    )
    assert masked("echo") == "echo"


def test_diagram_is_bounded():
    from mcp_ref.workbench.diagram import MAX_ARROWS, Recorder

    recorder = Recorder()
    for n in range(MAX_ARROWS + 50):  # every one of a shape of its own: none is a look-alike
        recorder("-->", json.dumps({"jsonrpc": "2.0", "method": f"m{n}"}).encode())
    text = recorder.mermaid("bounded")
    assert text.count("--)") == MAX_ARROWS and "and 50 more message(s), not drawn" in text


FENCE = "notifications/x\n```\n\n# Injected heading\n\n[click me](https://attacker.example/)\n\n```"


def test_a_label_is_one_line_of_plain_text_whatever_the_peer_sent():
    """``short()``: nothing of what Mermaid or the Markdown around the diagram reads as syntax."""
    from mcp_ref.workbench.diagram import short

    assert short("a;b#c", 64) == "a,bc"
    assert short("x\r\ny\u2028z\x00w", 64) == "x  y z w"
    assert short("```js %%{init}%% 100%", 64) == "'''js %{init}% 100%"
    assert short("cut \ud83d", 64) == "cut \ufffd"
    assert short("x" * 40) == "x" * 31 + "…"


def test_a_peer_s_method_never_leaves_its_arrow():
    """A method holding line breaks and a code fence, in a request, a notification and the result
    that answers a request: each arrow one line, and the Markdown one code fence, the diagram's
    (the method was drawn as it was, ending the fence)."""
    from mcp_ref.workbench.diagram import Recorder

    recorder = Recorder()
    recorder("<--", json.dumps({"jsonrpc": "2.0", "method": FENCE}).encode())
    recorder("<--", json.dumps({"jsonrpc": "2.0", "id": 1, "method": FENCE}).encode())
    recorder("-->", json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode())
    text = recorder.mermaid("fenced")
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("```")] == ["```mermaid", "```"], text
    assert "\n# Injected heading" not in text
    arrows = [line for line in lines if line.startswith("    ") and "participant" not in line]
    assert [arrow.split(": ", 1)[0] for arrow in arrows] == ["    S--)C", "    S->>C", "    C-->>S"]
    assert all("notifications/x '''" in arrow for arrow in arrows)


@pytest.mark.slow
def test_a_server_s_method_stays_inside_the_diagram_of_tools_diagram(tmp_path):
    """``mcp-ref tools --diagram FILE``, a server whose notification's method holds a code fence
    and whose name a lone surrogate (tests/servers/strange_text_server.py): one fence, the
    diagram's; the file written (the name with U+FFFD)."""
    from conftest import SERVERS

    out = tmp_path / "tools.md"
    server = f'"{sys.executable}" "{SERVERS / "strange_text_server.py"}"'
    proc = cli("tools", server, "--era", "handshake", "--diagram", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if line.startswith("```")] == ["```mermaid", "```"]
    assert "\n# Injected heading" not in text and "participant S as weather \ufffd" in text


def test_a_message_too_deep_for_the_diagram_is_drawn_as_no_message():
    """``--diagram`` on a message nested as deep as Python's parser reads (the session refuses it:
    deeper than 64): drawn as not a JSON-RPC message, and nothing raises (drawing it recursed)."""
    from mcp_ref.workbench.diagram import Recorder

    recorder = Recorder()
    recorder("<--", b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 600 + b"]" * 600 + b"}")
    recorder("<--", json.dumps({"jsonrpc": "2.0", "method": "notifications/x"}).encode())
    assert recorder.lines == ["    S-xC: (not a JSON-RPC message)", "    S--)C: notifications/x"]


def test_a_message_the_client_sends_nested_too_deep_is_drawn_as_what_it_is():
    """``--diagram`` on a request the client sends nested 600 and 5,000 deep (the session sends
    what its caller built, and reads no deeper than 64 itself): drawn as the request it is, read
    and shaped without recursing (drawn as not a JSON-RPC message)."""
    from mcp_ref.workbench.diagram import Recorder

    recorder = Recorder()
    for request_id, depth in ((1, 600), (2, 5_000)):
        head = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x","arguments":'
        pad = "[" * depth + "]" * depth
        recorder("-->", (head % request_id + '{"pad":' + pad + "}}}").encode())
    assert recorder.lines == ["    C->>S: tools/call x #1", "    C->>S: tools/call x #2"]


def test_the_trace_writes_to_stderr_as_it_is_at_each_message(monkeypatch):
    """``--trace`` with no stream of its own writes to ``sys.stderr`` as it is when a message
    comes: ``mcp-ref --trace run`` begins the trace before the stdio server puts its own stderr
    in place (one whose writes never wait for a client that does not read them)."""
    import io

    from mcp_ref.workbench.cli import _Trace

    trace = _Trace()
    later = io.StringIO()
    monkeypatch.setattr(sys, "stderr", later)
    trace("-->", b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    trace.close()
    assert later.getvalue() == '--> {"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def test_a_message_too_deep_for_the_trace_is_printed_as_text():
    """``--trace`` on a message nested as deep as Python's parser reads: printed, as text (the
    hook raised RecursionError; the session then dropped the message)."""
    import io

    from mcp_ref.workbench.cli import _Trace

    out = io.StringIO()
    trace = _Trace(out)
    deep = b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 600 + b"]" * 600 + b"}"
    trace("<--", deep)
    trace.close()
    assert out.getvalue() == f"<-- {deep.decode()}\n"


def test_the_trace_never_shows_an_answer_whose_request_it_hid():
    """Concurrent calls are answered in any order: the trace shows the first three requests of a
    shape and hides the rest, and hides the answers to the hidden ones, whichever arrive first (it
    showed the first three answers to arrive: an answer to a hidden request, which a schema check
    of the trace then read against an earlier conversation's request with the same id)."""
    import io

    from mcp_ref.workbench.cli import _Trace

    out = io.StringIO()
    trace = _Trace(out)
    for n in range(1, 6):
        trace(
            "-->",
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": str(n)}},
                }
            ).encode(),
        )
    for n in (5, 4, 1, 2, 3):  # the hidden requests' answers arrive first
        trace("<--", json.dumps({"jsonrpc": "2.0", "id": n, "result": {"content": []}}).encode())
    trace.close()
    lines = out.getvalue().splitlines()
    shown = [json.loads(line[4:])["id"] for line in lines if line.startswith(("--> ", "<-- "))]
    assert shown == [1, 2, 3, 1, 2, 3], lines
    assert "... 4 more message(s) shaped like those above" in out.getvalue()
    check_trace(out.getvalue()).assert_valid()


def test_the_demo_diagram_is_committed_and_linked():
    from conftest import ROOT

    diagram = (ROOT / "docs" / "demo-diagram.md").read_text()
    assert (
        "```mermaid\nsequenceDiagram" in diagram
        and "tools/call echo" in diagram
        and "sampling/createMessage" in diagram
    )
    assert (
        "Note over C,S: 2. Tools\n" in diagram and "Note over C,S: 23. Authorization" in diagram
    )  # sections noted
    assert "docs/demo-diagram.md" in (ROOT / "README.md").read_text()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_on_a_terminal_progress_is_a_bar_redrawn_in_place():
    out = _terminal_session(["call", TARGET, "count_slowly", "steps=4", "delay=0.01"], [])
    assert (
        "\r[#####---------------] 1/4 step 1 of 4" in out
        and "\r[####################] 4/4 step 4 of 4" in out
    )
    assert "mcp-ref: progress" not in out  # the line form is for pipes and files
    assert "counted to 4" in out


def test_a_demo_whose_server_cannot_start_is_one_line(monkeypatch, capsys):
    """The walkthrough's server exits at once (here: a command that fails): one line, exit 4."""
    from mcp_ref.workbench import walkthrough
    from mcp_ref.workbench.cli import main

    monkeypatch.setattr(
        walkthrough, "server_command", lambda: [sys.executable, "-c", "raise SystemExit(3)"]
    )
    assert main(["demo", "--timeout", "10"]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        err[-1].startswith("mcp-ref: the demo could not run its server:")
        and "exited with status 3" in err[-1]
    )


MISSHAPEN = f'"{sys.executable}" "{Path(__file__).parent.parent / "servers" / "misshapen_results_server.py"}"'


@pytest.mark.parametrize(
    "verb", [("tools",), ("call", "anything"), ("read", "x://a"), ("--json", "tools")]
)
def test_a_result_without_the_specs_shape_is_one_line_and_exit_5(verb):
    # The client reports it as InvalidResult: the server's mistake, one line like any error.
    flags = [word for word in verb if word.startswith("--")]
    words = [word for word in verb if not word.startswith("--")]
    proc = cli(words[0], *flags, "--era", "handshake", MISSHAPEN, *words[1:])
    assert proc.returncode == 5
    assert "does not have the shape" in one_error_line(proc)
    if flags:
        assert json.loads(proc.stdout)["exitCode"] == 5


def test_a_pair_nested_too_deeply_is_a_usage_error_or_for_a_text_parameter_its_text():
    proc = cli("call", TARGET, "count_slowly", "steps=" + "[" * 30_000)
    assert proc.returncode == 2
    assert "nested too deeply" in one_error_line(proc)
    proc = cli("call", TARGET, "echo", "text=" + "[" * 30_000)
    assert proc.returncode == 0


def test_a_header_without_a_colon_is_refused_without_its_value():
    proc = cli("tools", "--header", "Authorization Bearer SECRET-TOKEN", "http://127.0.0.1:9/mcp")
    assert proc.returncode == 2
    assert "SECRET-TOKEN" not in proc.stderr and "'Authorization ...'" in one_error_line(proc)


def test_a_diagram_that_cannot_be_written_fails_a_verb_that_went_well(tmp_path):
    proc = cli("tools", TARGET, "--diagram", str(tmp_path / "missing" / "d.md"))
    assert proc.returncode == 2
    assert "cannot write the diagram" in proc.stderr


def test_a_line_for_the_user_is_one_write_so_a_relayed_server_line_is_never_split(monkeypatch):
    """A server's stderr line, relayed by its reading thread, was print()ed: the text and its line
    end were two writes, and a ``--trace`` line the main thread wrote between them ran on the same
    line (the trace's JSON could not be read back).  Now the line and its end are one write."""
    from mcp_ref.workbench.cli_output import to_stderr

    class Writes:
        def __init__(self):
            self.calls: list[str] = []

        def write(self, text: str) -> int:
            self.calls.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    stderr = Writes()
    monkeypatch.setattr(sys, "stderr", stderr)
    to_stderr("server says hello")
    assert stderr.calls == ["server says hello\n"]
