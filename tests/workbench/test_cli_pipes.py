"""Issue 23 items 7, 2 and 11: a CLI that pipes, ``--log-level``, ``install``, and the demo in order.

``--args -`` and ``--args @FILE``; ``tools`` with parameter types and enums; a failed launch's stderr
shown once; ``--json info`` naming the negotiated version in both eras; ``--trace serve-demo``
tracing the server's side; ``--log-level`` for client verbs (the server's log messages) and for
``serve-demo`` (its own log); ``mcp-ref install`` writing Claude Desktop's configuration; the demo's
server stderr shown in its section, each section pointing at its code, and noted in the diagram.
The servers are real subprocesses (``python -m mcp_ref serve-demo``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, WAIT, run_cli, run_cli_process, watch_stderr
from test_hardening_small import ESCAPE_SERVER, OBEYED
from test_http_deploy import LineReader, stop

from mcp_ref import Client
from mcp_ref.errors import LimitExceeded

TARGET = f'"{sys.executable}" -m mcp_ref serve-demo'
WORKBENCH = ROOT / "mcp_ref" / "workbench"


def one_error_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- --args - and --args @FILE ---------------------------------------------------------------------


@pytest.mark.slow
def test_args_from_stdin_and_from_a_file(tmp_path):
    piped = run_cli_process("call", TARGET, "add", "--args", "-", "b=40", stdin='{"a": 2, "b": 1}')
    assert piped.returncode == 0 and piped.stdout == "42\n", (
        piped.stderr
    )  # KEY=VALUE pairs override --args
    arguments = tmp_path / "args.json"
    arguments.write_text(json.dumps({"name": "Ada", "style": "formal"}), encoding="utf-8")
    proc = run_cli("prompt", TARGET, "greet", "--args", f"@{arguments}")
    assert proc.returncode == 0 and proc.stdout == "[user] Good day, Ada.\n", proc.stderr
    # Refused before anything is launched: one line, exit 2.
    assert (
        one_error_line(run_cli("call", TARGET, "add", "--args", "-", stdin="[1, 2]"))
        == "mcp-ref: --args - (stdin) must be a JSON object"
    )
    assert one_error_line(run_cli("call", TARGET, "add", "--args", "-", stdin="{oops")).startswith(
        "mcp-ref: --args - (stdin) is not valid JSON:"
    )
    missing = run_cli("call", TARGET, "add", "--args", f"@{tmp_path / 'nowhere.json'}")
    assert (
        missing.returncode == 2
        and "cannot read" in one_error_line(missing)
        and "No such file" in missing.stderr
    )
    arguments.write_text('{"name": "Ada", "style": 2}', encoding="utf-8")
    wrong = run_cli("prompt", TARGET, "greet", "--args", f"@{arguments}")
    assert wrong.returncode == 2 and one_error_line(wrong) == (
        "mcp-ref: prompt arguments must be strings; --args gives other JSON for: style"
    )


# -- tools: types and enums ------------------------------------------------------------------------


@pytest.mark.slow
def test_tools_shows_parameter_types_and_enums():
    lines = run_cli("tools", TARGET).stdout.splitlines()
    assert lines[0] == "echo(text: string)  Return the text unchanged."
    assert (
        'weather(city: string, unit: "celsius"|"fahrenheit" = "celsius")  Report the weather'
        in "\n".join(lines)
    )
    assert any(
        line.startswith("count_slowly(steps: integer, delay: number = 0.05)") for line in lines
    )


def test_schema_types_follow_refs_unions_arrays_and_formats():
    from mcp_ref.types import Tool
    from mcp_ref.workbench.cli_output import describe_tool, schema_type

    schema = {
        "type": "object",
        "$defs": {
            "Unit": {"enum": ["c", "f"]},
            "Point": {"type": "object", "properties": {"x": {"type": "number"}}},
        },
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "unit": {"$ref": "#/$defs/Unit"},
            "where": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": ["string", "integer"]}},
            "mode": {"const": "fast"},
            "other": {"$ref": "https://example.com/elsewhere#Thing"},
            "anything": {},
        },
        "required": ["when", "unit"],
    }
    tool = Tool.from_wire({"name": "plan", "inputSchema": schema})
    assert describe_tool(tool) == (
        'plan(when: string<date-time>, unit: "c"|"f", where?: {x?: number}|null, '
        'tags?: (string|integer)[], mode?: "fast", other?: Thing, anything?: any)'
    )
    assert schema_type({"enum": list(range(20))}) == "0|1|2|3|4|5|6|7|…"
    looping = {"$defs": {"A": {"$ref": "#/$defs/A"}}}
    assert schema_type({"$ref": "#/$defs/A"}, looping) == "A"  # bounded: a loop of refs ends


# -- a failed launch's stderr, once ----------------------------------------------------------------


@pytest.mark.slow
def test_a_failed_launchs_stderr_is_shown_once():
    server = f'"{sys.executable}" -c "import sys; print(\'boom: no config\', file=sys.stderr); sys.exit(3)"'
    proc = run_cli("tools", server)
    assert proc.returncode == 4 and "exited with status 3" in proc.stderr
    assert proc.stderr.count("boom: no config") == 1, (
        proc.stderr
    )  # passed through as it came, not repeated


# -- --json info: the negotiated version, both eras ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("era, version", [("modern", "2026-07-28"), ("handshake", "2025-11-25")])
def test_json_info_carries_the_negotiated_version(era, version):
    proc = run_cli("--json", "info", "--era", era, TARGET)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["protocolVersion"] == version
    assert ("supportedVersions" in info) == (era == "modern") and ("serverInfo" in info) == (
        era == "handshake"
    )


# -- --trace serve-demo ----------------------------------------------------------------------------


@pytest.mark.slow
def test_trace_serve_demo_traces_the_server_side_on_stdio():
    proc = run_cli("tools", f'"{sys.executable}" -m mcp_ref --trace serve-demo')
    assert proc.returncode == 0 and proc.stdout.startswith("echo(")  # stdout stays the protocol's
    received = [
        json.loads(line[4:]) for line in proc.stderr.splitlines() if line.startswith("<-- ")
    ]
    sent = [json.loads(line[4:]) for line in proc.stderr.splitlines() if line.startswith("--> ")]
    assert (
        received[0]["method"] == "server/discover"
        and "result" in sent[0]
        and sent[0]["id"] == received[0]["id"]
    )
    assert [m["method"] for m in received].count("tools/list") == 3  # every page


@pytest.mark.slow
def test_trace_serve_demo_traces_the_server_side_over_http():
    command = [sys.executable, "-m", "mcp_ref", "--trace", "serve-demo", "--http", "127.0.0.1:0"]
    server = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    errors = LineReader(server.stderr)
    watch_stderr("serve-demo --trace --http", lambda: list(errors.all))
    try:
        url = errors.wait_for(r"serving the demo at (http://127\.0\.0\.1:\d+/mcp)").group(1)
        for era in ("modern", "handshake"):
            assert (
                run_cli("call", url, "--era", era, "echo", "text=over http").stdout == "over http\n"
            )
        errors.wait_for(r'^--> .*"over http"')  # the handshake era's answer: the last message
    finally:
        stop(server, signal.SIGINT)
    traced = [json.loads(line[4:]) for line in errors.all if line.startswith(("<-- ", "--> "))]
    methods = [message.get("method") for message in traced]
    assert (
        "server/discover" in methods
        and "initialize" in methods
        and methods.count("tools/call") == 2
    )


# -- --log-level -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_log_level_shows_the_servers_log_messages(era):
    proc = run_cli("call", "--era", era, "--log-level", "warning", TARGET, "log_levels")
    assert proc.returncode == 0, proc.stderr
    logged = [line for line in proc.stderr.splitlines() if line.startswith("mcp-ref: server log ")]
    assert logged == [
        "mcp-ref: server log warning [demo]: a warning message",
        "mcp-ref: server log error [demo]: a error message",
    ], proc.stderr
    quiet = run_cli("call", "--era", era, TARGET, "log_levels")  # without it, none is shown
    assert quiet.returncode == 0 and "server log" not in quiet.stderr


@pytest.mark.slow
def test_log_level_of_serve_demo_is_the_servers_own_log():
    def refusals(*options: str, environment: str | None = None) -> list[str]:
        command = [sys.executable, "-m", "mcp_ref", *options, "serve-demo"]
        env = {"MCP_REF_LOG_LEVEL": environment or ""}  # "": unset, whatever the outer one says
        with Client.stdio(command, stderr="capture", timeout=WAIT, env=env) as client:
            for _ in range(
                4
            ):  # the demo's roll_dice allows 3 a minute: the fourth is refused, and logged
                try:
                    client.call_tool("roll_dice", {})
                except LimitExceeded:  # the fourth
                    pass
        return [line for line in client.session.transport.stderr_lines if "rate limit" in line]

    assert refusals() == [
        "mcp-ref: WARNING: rate limit 3/60s on a tool: refused tools/call, from stdio"
    ]
    assert refusals("--log-level", "error") == []
    # spec_notes/settings.md: without --log-level, MCP_REF_LOG_LEVEL sets it, as for Server.run()
    assert refusals(environment="error") == []
    assert refusals("--log-level", "warning", environment="error") != []  # the option wins


def test_a_bad_log_level_in_the_environment_is_one_usage_line():
    proc = run_cli_process("run", "server.py", env=dict(os.environ, MCP_REF_LOG_LEVEL="loud"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "mcp-ref: error: MCP_REF_LOG_LEVEL must be one of debug, info, notice, warning, error, "
        "critical, alert, emergency, not 'loud'"
    ]
    # --log-level wins: the variable is then not read
    given = run_cli_process(
        "run",
        "--log-level",
        "info",
        "no_such_file.py",
        env=dict(os.environ, MCP_REF_LOG_LEVEL="loud"),
    )
    assert "MCP_REF_LOG_LEVEL" not in given.stderr and given.returncode != 0


# -- install ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_install_prints_and_writes_claude_desktops_configuration(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.py").write_text("from mcp_ref.workbench.demo import main\nmain()\n")
    python = Path(sys.executable)
    printed = run_cli(
        "install", f'"{python}" server.py', "--name", "weather", "--env", "API_KEY=k=1", "--print"
    )
    assert printed.returncode == 0, printed.stderr
    entry = {
        "command": str(python),
        "args": [str(tmp_path / "server.py")],
        "env": {"API_KEY": "k=1"},
    }
    assert json.loads(printed.stdout) == {
        "mcpServers": {"weather": entry}
    }  # a relative file made absolute

    config = tmp_path / "claude" / "claude_desktop_config.json"
    config.parent.mkdir()
    before = {
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {"other": {"command": "node", "args": ["x.js"]}},
    }
    config.write_text(json.dumps(before))
    # No --name: the server is launched once, and its own name (serverInfo.name) is the entry's.
    proc = run_cli("install", f'"{python}" server.py', "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    written = json.loads(config.read_text())
    assert written == {
        **before,
        "mcpServers": {
            **before["mcpServers"],
            "mcp-ref-demo": {"command": str(python), "args": [str(tmp_path / "server.py")]},
        },
    }
    assert (
        json.loads((config.parent / "claude_desktop_config.json.bak").read_text()) == before
    )  # backed up first
    assert (
        "added the server mcp-ref-demo" in proc.stderr and "1 other server(s) kept" in proc.stderr
    )

    same = run_cli(
        "install", f'"{python}" server.py', "--config", str(config), "--name", "mcp-ref-demo"
    )
    assert same.returncode == 0 and "nothing to change" in same.stderr
    other = run_cli("install", f'"{python}" server.py', "--config", str(config), "--name", "other")
    assert other.returncode == 2 and "--force" in one_error_line(other)
    assert json.loads(config.read_text()) == written  # untouched
    forced = run_cli(
        "install", f'"{python}" server.py', "--config", str(config), "--name", "other", "--force"
    )
    assert forced.returncode == 0 and json.loads(config.read_text())["mcpServers"]["other"][
        "args"
    ] == [str(tmp_path / "server.py")]

    config.write_text('{"mcpServers": {"other": ')  # not JSON: never overwritten
    broken = run_cli("install", f'"{python}" server.py', "--config", str(config), "--name", "x")
    assert broken.returncode == 2 and "not valid JSON" in one_error_line(broken)
    assert config.read_text() == '{"mcpServers": {"other": '
    url = run_cli("install", "http://127.0.0.1:9/mcp", "--config", str(config))
    assert url.returncode == 2 and "launches servers on stdio" in one_error_line(url)


@pytest.mark.slow
def test_install_escapes_control_and_bidi_characters_and_refuses_a_server_name_with_them(tmp_path):
    """What ``install`` prints, and the file it writes, hold no character a terminal would obey
    (C1 CSI U+009B, the bidi override U+202E ...): JSON escapes them (the same JSON); a server
    whose own name holds one is not installed under it."""
    named = run_cli_process("install", ESCAPE_SERVER, "--print")  # the name is the server's own
    refusal = named.stderr.splitlines()[-1]  # after the server's own stderr (shown escaped too)
    assert named.returncode == 2 and refusal.endswith("name the entry with --name"), named.stderr
    assert "\\x9b" in refusal and "\\u202e" in refusal
    assert not [char for char in OBEYED if char in named.stdout + named.stderr]
    hostile = "\x1b[2J\r\x9b31m\x7f\u202e"  # clear screen, CR, C1 CSI, DEL, bidi override
    name = f"weather{hostile}"
    secret = f"KEY=v{hostile}"
    printed = run_cli_process("install", TARGET, "--name", name, "--env", secret, "--print")
    assert printed.returncode == 0, printed.stderr
    assert not [char for char in OBEYED if char in printed.stdout + printed.stderr]
    entry = json.loads(printed.stdout)["mcpServers"][name]  # the same JSON: the same name
    assert entry["env"] == {"KEY": f"v{hostile}"}
    config = tmp_path / "claude_desktop_config.json"
    written = run_cli_process("install", TARGET, "--name", name, "--config", str(config))
    assert written.returncode == 0, written.stderr
    text = config.read_text(encoding="utf-8")
    assert not [char for char in OBEYED if char in text + written.stderr]
    assert list(json.loads(text)["mcpServers"]) == [name]
    assert "\\x9b" in written.stderr and "\\u202e" in written.stderr  # the name, shown escaped


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="file modes and umask are POSIX")
def test_install_creates_a_configuration_holding_secrets_readable_by_its_owner_only(tmp_path):
    """A new file (and the backup of one) is 0600 under the usual umask 022; one that exists keeps
    its mode, never widened."""
    config = tmp_path / "new" / "claude_desktop_config.json"

    def install(name: str) -> None:
        # The real command, under the umask that gives a new file 0644 by default.
        argv = [
            sys.executable,
            "-m",
            "mcp_ref",
            "install",
            TARGET,
            "--name",
            name,
            "--env",
            "API_KEY=secret",
            "--config",
            str(config),
        ]
        umask_022 = ["sh", "-c", 'umask 022 && exec "$@"', "sh"]
        proc = subprocess.run([*umask_022, *argv], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr

    def mode(path: Path) -> int:
        return path.stat().st_mode & 0o777

    install("first")
    assert mode(config) == 0o600
    install("second")
    assert (mode(config), mode(config.with_name(config.name + ".bak"))) == (0o600, 0o600)
    config.chmod(0o640)  # the owner's choice stays
    install("third")
    assert (mode(config), mode(config.with_name(config.name + ".bak"))) == (0o640, 0o640)
    assert list(json.loads(config.read_text())["mcpServers"]) == ["first", "second", "third"]


@pytest.mark.parametrize(
    "held, said",
    [
        ('{"zoom": 1e999, "mcpServers": {}}', "1e999 is too large for a JSON number"),
        ('{"mcpServers": {"a": {"command": "x", "n": -1E400}}}', "-1E400 is too large"),
        ('{"ratio": NaN}', "NaN is no JSON value"),
        ('{"limits": [1, Infinity]}', "Infinity is no JSON value"),
        ('{"floor": -Infinity}', "-Infinity is no JSON value"),
    ],
)
def test_install_leaves_a_file_json_cannot_carry_untouched(tmp_path, held, said):
    """Python's parser reads ``1e999`` as inf and ``NaN``/``Infinity`` as numbers; written back, the
    file would hold ``Infinity``, which no JSON reader takes (RFC 8259 §6): it is not touched."""
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(held)
    proc = run_cli("install", TARGET, "--name", "demo", "--config", str(config))
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "is not valid JSON" in line and said in line and "not touched" in line
    assert config.read_text() == held
    assert not config.with_name(config.name + ".bak").exists()  # no backup either


def test_install_keeps_large_integers_and_a_byte_order_mark(tmp_path):
    config = tmp_path / "claude_desktop_config.json"
    big = 10**400  # an integer JSON may carry, kept exactly
    config.write_bytes(b"\xef\xbb\xbf" + json.dumps({"big": big, "mcpServers": {}}).encode())
    proc = run_cli("install", TARGET, "--name", "demo", "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    written = json.loads(config.read_text())
    assert written["big"] == big and list(written["mcpServers"]) == ["demo"]


#: ``mcp-ref install ARGS`` held at a gate: ready (its modules loaded) on stdout, then run when a
#: line comes on stdin, so that the installs read and write the file at the same moment.
GATED_INSTALL = """
import sys
from mcp_ref.workbench import cli, install
print("ready", flush=True)
sys.stdin.readline()
sys.exit(cli.main(sys.argv[1:]))
"""


def line_from(process: subprocess.Popen, timeout: float) -> str:
    """The next line ``process`` writes on its stdout (a pipe), waited for ``timeout`` seconds at
    most."""
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(timeout), f"no line from {process.args!r} in {timeout} s"
    return process.stdout.readline()


@pytest.mark.slow
def test_installs_run_at_once_each_keep_the_others_entries(tmp_path):
    """Twelve real ``mcp-ref install`` processes released together on one file: each entry is
    there (once read, changed and written over one another, most were lost)."""
    config = tmp_path / "claude_desktop_config.json"
    config.write_text('{"globalShortcut": "Ctrl+Space", "mcpServers": {}}')
    names = [f"server{n}" for n in range(12)]
    installs = [
        subprocess.Popen(
            [sys.executable, "-c", GATED_INSTALL, "install", TARGET, "--name", name]
            + ["--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    try:
        for process in installs:  # each at the gate
            assert line_from(process, WAIT * 3) == "ready\n"
        for process in installs:
            process.stdin.write("go\n")
            process.stdin.flush()
        for process in installs:
            _, stderr = process.communicate(timeout=WAIT * 3)
            assert process.returncode == 0 and "Traceback" not in stderr, stderr
    finally:
        for process in installs:
            if process.poll() is None:
                process.kill()
                process.wait(WAIT)
    written = json.loads(config.read_text())
    assert sorted(written["mcpServers"]) == sorted(names)
    assert written["globalShortcut"] == "Ctrl+Space"
    assert config.with_name(config.name + ".lock").exists()  # left in place, on purpose


def test_install_waits_for_the_lock_and_gives_up_past_its_time(tmp_path, monkeypatch):
    """While another holds the lock, an install waits; past :data:`LOCK_TIMEOUT`, one line, exit
    2, the file untouched."""
    from mcp_ref.workbench import install

    monkeypatch.setattr(install, "LOCK_TIMEOUT", 0.2)
    config = tmp_path / "claude_desktop_config.json"
    config.write_text('{"mcpServers": {}}')
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from mcp_ref.workbench.install import locked\n"
            "with locked(Path(sys.argv[1])):\n"
            "    print('held', flush=True); sys.stdin.readline()",
            str(config),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert line_from(holder, WAIT) == "held\n"
        proc = run_cli("install", TARGET, "--name", "late", "--config", str(config))
        assert proc.returncode == 2
        assert "is still locked after 0.2 s" in one_error_line(proc)
        assert config.read_text() == '{"mcpServers": {}}'
    finally:
        holder.communicate("\n", timeout=WAIT)
    proc = run_cli("install", TARGET, "--name", "late", "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert list(json.loads(config.read_text())["mcpServers"]) == ["late"]


@pytest.mark.slow
def test_install_finds_the_configuration_where_each_system_keeps_it():
    from mcp_ref.workbench.install import config_path

    home = Path("/home/ada")
    assert (
        config_path("darwin", {}, home)
        == home / "Library/Application Support/Claude/claude_desktop_config.json"
    )
    assert config_path("win32", {"APPDATA": "C:/Users/ada/AppData/Roaming"}, home) == Path(
        "C:/Users/ada/AppData/Roaming/Claude/claude_desktop_config.json"
    )
    assert config_path("linux", {}, home) == home / ".config/Claude/claude_desktop_config.json"
    assert config_path("linux", {"XDG_CONFIG_HOME": "/cfg"}, home) == Path(
        "/cfg/Claude/claude_desktop_config.json"
    )


# -- the demo: in order, pointing at its code, noted in the diagram --------------------------------


def _defined(path: Path) -> set[str]:
    return {
        node.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef)
    }


@pytest.mark.slow
def test_the_demo_prints_in_order_points_at_its_code_and_notes_its_sections(tmp_path):
    diagram = tmp_path / "demo.md"
    # stdout and stderr into one pipe, as `mcp-ref demo 2>&1 | less` reads it
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_ref", "demo", "--era", "modern", "--diagram", str(diagram)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=WAIT * 6,
    )
    out = proc.stdout
    assert proc.returncode == 0, out
    lines = out.splitlines()
    refused = lines.index(
        "   server stderr: rate limit 3/60s on a tool: refused tools/call, from stdio"
    )
    policy = next(
        i
        for i, line in enumerate(lines)
        if line.endswith(". Policy: who may see and call what, and how often")
    )
    tasks = next(
        i
        for i, line in enumerate(lines)
        if line.endswith(". Tasks (the 2026-07-28 extension and 2025-11-25's tasks)")
    )
    assert (
        policy
        < refused
        < tasks
        < next(i for i, line in enumerate(lines) if line.startswith("Every step behaved"))
    )
    sections = [i for i, line in enumerate(lines) if re.match(r"\d+\. ", line)]
    assert len(sections) == 11
    for i in (
        sections
    ):  # each section's next line names the code that implements it, and that code exists
        assert lines[i + 1].startswith("   code: demo.py: "), lines[i : i + 2]
        for group in lines[i + 1][len("   code: ") :].split("; "):
            file, _, names = group.partition(": ")
            missing = set(names.split(", ")) - _defined(WORKBENCH / file)
            assert not missing, f"{lines[i]}: {file} has no {missing}"
    notes = [
        line.strip()
        for line in diagram.read_text().splitlines()
        if line.strip().startswith("Note over C,S: ")
    ]
    titles = [line for line in notes if "more message(s)" not in line]
    assert titles[0].startswith("Note over C,S: The 2026-07-28 era") and titles[1:] == [
        f"Note over C,S: {lines[i]}" for i in sections
    ]


def test_a_name_taken_otherwise_is_refused_without_the_entrys_secrets():
    from mcp_ref.workbench.cli_verbs import CliError
    from mcp_ref.workbench.install import add_entry

    old = {"command": "srv", "env": {"API_KEY": "SUPERSECRET1"}, "headers": {"Authorization": "x"}}
    config = {"mcpServers": {"n1": old}}
    with pytest.raises(CliError) as refused:
        add_entry(config, "n1", {"command": "srv", "env": {"API_KEY": "OTHER"}}, force=False)
    said = str(refused.value)
    assert "already has a server named 'n1'" in said and '"API_KEY": "***"' in said
    assert "SUPERSECRET1" not in said and '"Authorization": "***"' in said
