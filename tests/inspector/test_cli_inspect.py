"""``mcp-ref inspect`` and ``mcp-ref dev`` as the user runs them: real subprocesses that print the
page's address, serve it over the token, and stop cleanly on Ctrl-C (exit 0, nothing left)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys

import pytest
import requests
from conftest import MCP_REF_FROM_A_TERMINAL, WAIT, run_cli
from inspector_harness import state_when
from test_cli_login import protected_demo  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow

ADDRESS = r"^mcp-ref inspector: (http://127\.0\.0\.1:(\d+)/([A-Za-z0-9_-]+)/)$"
DEMO = shlex.join([sys.executable, "-m", "mcp_ref", "serve-demo"])  # `mcp-ref serve-demo`


class Running:
    """``python -m mcp_ref ARGS`` running: the address it printed; :meth:`stop` sends Ctrl-C."""

    def __init__(self, *args: str, cwd=None, env=None, new_session: bool = False):
        from test_http_deploy import LineReader

        self.proc = subprocess.Popen(
            [*MCP_REF_FROM_A_TERMINAL, *args],
            cwd=cwd,
            env=env,
            start_new_session=new_session,  # a process group of its own, to see what it leaves
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr = LineReader(self.proc.stderr)
        found = self.stderr.wait_for(ADDRESS)
        self.url, self.port = found.group(1), int(found.group(2))
        self.http = requests.Session()

    def state_when(self, ready) -> dict:
        """The state, once the page's event stream says ``ready(state)``."""
        return state_when(self.url, ready)

    def stop(self, stop_signal: int = signal.SIGINT) -> tuple[int, str]:
        """Ctrl-C (or another ``stop_signal``); the exit code and the rest of stderr."""
        self.http.close()
        self.proc.send_signal(stop_signal)
        try:
            code = self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(WAIT)
        self.stderr.thread.join(WAIT)
        return code, "".join(self.stderr.all)


def test_inspect_serves_the_page_and_stops_on_ctrl_c():
    """``mcp-ref inspect "mcp-ref serve-demo" --no-browser``."""
    running = Running("inspect", DEMO, "--no-browser")
    try:
        page = running.http.get(running.url, timeout=WAIT)
        assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
        assert (
            running.http.get(running.url.rsplit("/", 2)[0] + "/", timeout=WAIT).status_code == 404
        )
        state = running.state_when(lambda s: s["connected"] or s["error"])
        assert state["connected"], state
        assert state["server_info"]["name"] == "mcp-ref-demo" and state["transport"] == "stdio"
        assert running.http.get(running.url + "api/state", timeout=WAIT).json()["connected"]
    finally:
        code, stderr = running.stop()
    assert code == 0, stderr
    assert "Traceback" not in stderr
    [line] = [line for line in stderr.splitlines() if line.startswith("mcp-ref inspector:")]
    assert re.match(ADDRESS, line)
    with pytest.raises(requests.ConnectionError):  # nothing serves any more
        requests.get(running.url, timeout=WAIT)


def test_dev_inspects_the_readme_s_first_server(tmp_path):
    """``mcp-ref dev server.py``, on the README's first server."""
    from test_readme import _block

    (tmp_path / "server.py").write_text(_block("# server.py"))
    running = Running("dev", "server.py", "--no-browser", cwd=tmp_path)
    try:
        state = running.state_when(lambda s: s["connected"] or s["error"])
        assert state["connected"], state
        assert state["server_info"]["name"] == "notes"
        assert "-m mcp_ref run server.py" in state["target"]
        origin = {"Origin": f"http://127.0.0.1:{running.port}"}
        called = running.http.post(
            running.url + "api/call",
            json={"call": "c1", "name": "add_note", "arguments": {"title": "a", "text": "b"}},
            headers=origin,
            timeout=WAIT,
        ).json()
        assert called["result"]["content"][0]["text"] == "saved a"
    finally:
        code, stderr = running.stop()
    assert code == 0, stderr


def test_a_target_that_cannot_start_is_shown_on_the_page():
    running = Running("inspect", "--no-browser", "--", "no-such-command-for-mcp-ref")
    try:
        state = running.state_when(lambda s: not s["connecting"] and s["error"])
        assert "cannot launch 'no-such-command-for-mcp-ref'" in state["error"]
    finally:
        code, _ = running.stop()
    assert code == 0


SLOW_TO_START = (
    "import os, sys, time\n"
    "print('starting', os.getpid(), file=sys.stderr, flush=True)\n"
    "time.sleep(600)  # reads no stdin: the end of its input does not end it\n"
)


def test_ctrl_c_during_the_first_connect_stops_the_launched_server(tmp_path):
    """Ctrl-C while the server launched has not answered yet: the inspector exits and the
    server is stopped with it, not left running on its own."""
    (tmp_path / "slow.py").write_text(SLOW_TO_START)
    running = Running(
        "inspect",
        "--no-browser",
        "--connect-timeout",
        "600",
        "--",
        sys.executable,
        "slow.py",
        cwd=tmp_path,
    )
    pid = int(running.stderr.wait_for(r"starting (\d+)").group(1))
    try:
        code, stderr = running.stop()
        assert code == 0, stderr
        with pytest.raises(ProcessLookupError):  # stopped, and waited for: no such process
            os.kill(pid, 0)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_help_and_usage_errors():
    for verb in ("inspect", "dev"):
        shown = run_cli(verb, "--help")
        assert shown.returncode == 0 and "--port N" in shown.stdout and "examples:" in shown.stdout
    assert "inspect" in run_cli("--help").stdout
    missing = run_cli("inspect")
    assert missing.returncode == 2 and "inspect needs TARGET" in missing.stderr
    two = run_cli("dev", "a.py", "b.py")
    assert two.returncode == 2 and "dev takes one SERVER" in two.stderr


def test_a_protected_server_is_logged_in_to_as_every_verb_does(protected_demo, tmp_path):
    """OAuth login through the browser, as ``mcp-ref call`` does it (the same code path); the
    page shows the exchanges with the bearer token masked, in the records and in the export."""
    import os

    from test_cli_login import BROWSER_SCRIPT

    script = tmp_path / "browser.py"
    script.write_text(BROWSER_SCRIPT)
    env = dict(
        os.environ,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        BROWSER=f"{sys.executable} {script} {tmp_path / 'opened'} %s",
    )
    running = Running("inspect", protected_demo, env=env)
    try:
        state = running.state_when(lambda s: s["connected"] or s["error"])
        assert state["connected"], state
        records = running.http.get(running.url + "api/records?limit=1000", timeout=WAIT).json()
        sent = [
            value
            for record in records["records"]
            if record["kind"] == "http" and record["phase"] == "request"
            for name, value in record["headers"]
            if name.lower() == "authorization"
        ]
        assert sent and all(value.startswith("Bearer ") for value in sent)
        cached = json.loads(next((tmp_path / "cache").rglob("tokens.json")).read_text())
        tokens = re.findall(r'"access_token": "([^"]+)"', json.dumps(cached))
        assert tokens
        export = running.http.get(running.url + "api/export.jsonl", timeout=WAIT).text
        assert not any(token in export or token in str(sent) for token in tokens)
    finally:
        code, stderr = running.stop()
    assert code == 0, stderr


LEAKY_SERVER = (
    "import sys\n"
    "from mcp_ref import Server\n"
    "print(\"settings: {'api_key': 'sk-live-SECRET2', 'debug': True}\", file=sys.stderr)\n"
    "print('loaded: GITHUB_TOKEN=\"ghp_SECRET3xxxxxxxx\"', file=sys.stderr, flush=True)\n"
    "Server('leaky').run()\n"
)


def test_quoted_secrets_in_the_target_and_the_server_s_stderr_are_masked(tmp_path):
    """A target whose command line holds ``API_KEY='...'``, a server that writes a Python dict's
    repr and a shell's ``KEY="..."`` to its stderr: no secret in the state or the export."""
    from inspector_harness import EventReader

    (tmp_path / "leaky.py").write_text(LEAKY_SERVER)
    target = f"env API_KEY='sk-live-SECRET1' {shlex.quote(sys.executable)} leaky.py"
    running = Running("inspect", "--no-browser", target, cwd=tmp_path)
    events = EventReader(running.url + "events")
    try:
        events.wait_for("record", lambda r: "GITHUB_TOKEN" in r.get("line", ""))
        state = running.http.get(running.url + "api/state", timeout=WAIT).json()
        assert state["target"].startswith("env API_KEY='••••••' ")
        export = running.http.get(running.url + "api/export.jsonl", timeout=WAIT).text
        assert "GITHUB_TOKEN" in export and "'api_key'" in export
        assert "SECRET" not in export and "SECRET" not in json.dumps(state)
    finally:
        code, stderr = running.stop()
        events.close()
    assert code == 0, stderr


def inspecting(tmp_path, *script: str, new_session: bool = False) -> Running:
    """``mcp-ref inspect`` (no browser, handshake era) of ``python SCRIPT...`` run in
    ``tmp_path``."""
    return Running(
        "inspect",
        "--no-browser",
        "--era",
        "handshake",
        "--",
        sys.executable,
        *script,
        cwd=tmp_path,
        new_session=new_session,
    )


def inspect_bare_server(tmp_path, name: str, server: str, new_session: bool = False):
    """``mcp-ref inspect`` (no browser, handshake era) of ``server``, a bare stdio server's
    source (answering each line), saved as ``name`` in ``tmp_path``: the running inspector, its
    page's event stream, and the Origin header its page's requests carry."""
    from inspector_harness import EventReader
    from test_live import ANSWER_EACH_LINE

    (tmp_path / name).write_text(server + ANSWER_EACH_LINE)
    running = inspecting(tmp_path, name, new_session=new_session)
    events = EventReader(running.url + "events")
    origin = {"Origin": f"http://127.0.0.1:{running.port}"}
    return running, events, origin


def tools_listed(running: Running, events, origin: dict) -> requests.Response:
    """Once the inspector is connected, its answer to the page's listing of the tools."""
    events.wait_for("state", lambda s: s["connected"])
    return running.http.post(
        running.url + "api/list", json={"what": "tools"}, headers=origin, timeout=WAIT
    )


@pytest.mark.parametrize("stop_signal", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_while_a_result_is_checked_against_a_catastrophic_pattern_exits_at_once(
    tmp_path, stop_signal
):
    """A tool's ``outputSchema`` whose ``pattern`` takes exponential time on its result: while
    the result is checked, the page is answered, and Ctrl-C, SIGTERM (``kill PID``) or SIGHUP
    (the terminal closed) exits 0, leaving no process behind.  SIGTERM and SIGHUP killed the
    inspector with nothing closed, and the checking child went on matching at full CPU."""
    import threading

    from conftest import live_group_members
    from test_live import CATASTROPHIC_PATTERN_SERVER

    running, events, origin = inspect_bare_server(
        tmp_path, "catastrophic.py", CATASTROPHIC_PATTERN_SERVER, new_session=True
    )
    try:
        listed = tools_listed(running, events, origin)
        assert [tool["name"] for tool in listed.json()["items"]] == ["stuck", "fine"]
        call = {"call": "c1", "name": "stuck", "arguments": {}}
        threading.Thread(  # its answer is never awaited: Ctrl-C comes first
            target=lambda: requests.post(
                running.url + "api/call", json=call, headers=origin, timeout=WAIT
            ),
            daemon=True,
        ).start()
        events.wait_for("record", lambda r: "a!" in json.dumps(r.get("message")))  # its result
        assert requests.get(running.url + "api/state", timeout=WAIT).json()["connected"]
    finally:
        code, stderr = running.stop(getattr(signal, stop_signal))
        events.close()
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert live_group_members(running.proc.pid) == []  # the check's process went with it


#: A bare JSON-RPC server over stdio (2025-06-18) that answers ``tools/list`` after a line of a
#: megabyte that is no JSON: a credential, then ``'\'\'...`` (a shape a backtracking pattern
#: reads again from each of its quotes).
MEGABYTE_LINE_SERVER = """
import json
import sys


def result_of(method, params):
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "megabyte-line", "version": "1"},
        }
    if method == "tools/list":
        print("auth: Bearer sk-live-SECRET4xxxxxxxx " + "'\\\\" * 500_000, flush=True)
        return {"tools": []}
    return {}
"""


def test_a_megabyte_line_that_is_no_json_is_shown_cut_and_masked_and_the_page_answers(tmp_path):
    """A server's line of a megabyte that is no JSON: it is shown cut to 64 KiB, its credential
    masked, and the page is answered while and after it is handled (masking it took time growing
    with the square of its length, under the conversation's lock: the inspector stopped answering
    its page, for hours)."""
    running, events, origin = inspect_bare_server(tmp_path, "megabyte.py", MEGABYTE_LINE_SERVER)
    try:
        listed = tools_listed(running, events, origin)
        assert listed.status_code == 200, listed.text
        line = events.wait_for("record", lambda r: r.get("label") == "(not JSON)")
        assert line["message"].startswith("auth: Bearer ••••••")
        assert len(line["message"]) <= 64 * 1024 and line["size"] > 1_000_000
        state = running.http.get(running.url + "api/state", timeout=WAIT)
        assert state.status_code == 200 and state.json()["connected"]
        export = running.http.get(running.url + "api/export.jsonl", timeout=WAIT).text
        assert "SECRET4" not in export
    finally:
        code, stderr = running.stop()
        events.close()
    assert code == 0, stderr


#: A bare JSON-RPC server over stdio (2025-06-18) slow to exit: once its input ends it tells the
#: test (a line on a socket, with its pid) and sleeps, so that the inspector's closing waits for
#: it and then stops it (`StdioTransport.close`: SIGTERM past the shutdown timeout).
SLOW_TO_EXIT_SERVER = """
import json
import os
import socket
import sys
import time

PORT = int(sys.argv[1])


def result_of(method, params):
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "slow-to-exit", "version": "1"},
        }
    return {}
"""

SLOW_TO_EXIT_END = """
with socket.create_connection(("127.0.0.1", PORT), timeout=10) as told:
    told.sendall(f"input ended {os.getpid()}\\n".encode())
time.sleep(600)
"""


@pytest.mark.parametrize(
    "first, second", [("SIGTERM", "SIGTERM"), ("SIGINT", "SIGHUP"), ("SIGHUP", "SIGINT")]
)
def test_a_second_signal_while_the_inspector_closes_leaves_no_server_running(
    tmp_path, first, second
):
    """A stop signal, then another while the inspector waits for the launched server to exit (a
    ``kill`` sent twice, Ctrl-C pressed twice): the closing runs to its end, the server is stopped
    and waited for, and the inspector exits 0.  The second signal raised ``KeyboardInterrupt`` in
    the middle of the closing: the inspector exited 1 and the server went on running."""
    import socket

    from test_live import ANSWER_EACH_LINE

    (tmp_path / "slow_exit.py").write_text(
        SLOW_TO_EXIT_SERVER + ANSWER_EACH_LINE + SLOW_TO_EXIT_END
    )
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(WAIT)
    port = listener.getsockname()[1]
    running = inspecting(tmp_path, "slow_exit.py", str(port))
    pid = None
    try:
        running.state_when(lambda s: s["connected"])
        running.http.close()
        running.proc.send_signal(getattr(signal, first))
        told, _ = listener.accept()  # the server's input ended: the inspector is closing
        with told:
            told.settimeout(WAIT)
            pid = int(told.makefile().readline().split()[-1])
        running.proc.send_signal(getattr(signal, second))
        code = running.proc.wait(WAIT)
        running.stderr.thread.join(WAIT)
        stderr = "".join(running.stderr.all)
        assert code == 0, stderr
        assert "Traceback" not in stderr
        with pytest.raises(ProcessLookupError):  # stopped, and waited for: no such process
            os.kill(pid, 0)
    finally:
        listener.close()
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait(WAIT)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_signals_held_while_the_inspector_closes_are_at_their_defaults_in_a_server_launched_then():
    """While the inspector closes (:meth:`StopSignals.hold`), a second Ctrl-C, SIGTERM or SIGHUP
    does nothing; a server a connect still under way launches then starts with the three at their
    default actions.  ``SIG_IGN`` is kept across ``exec``: such a server started deaf to Ctrl-C
    and ``kill``."""
    from mcp_ref.workbench.cli import StopSignals

    program = (
        "import signal\n"
        "print(*(signal.getsignal(getattr(signal, n)) == signal.SIG_IGN"
        " for n in ('SIGINT', 'SIGTERM', 'SIGHUP')))\n"
    )
    # SIGHUP caught, as from a terminal, even under nohup (a handler: this run stays hangup-proof)
    hangup = signal.signal(signal.SIGHUP, lambda number, frame: None)
    stop_signals = StopSignals()
    try:
        stop_signals.hold()
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            handler = signal.getsignal(getattr(signal, name))
            assert callable(handler)
            handler(getattr(signal, name), None)  # does nothing: no KeyboardInterrupt
        launched = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, timeout=WAIT
        )
    finally:
        stop_signals.restore()
        signal.signal(signal.SIGHUP, hangup)
    assert launched.stdout.split() == ["False", "False", "False"], launched.stderr


def test_a_signal_the_command_was_started_ignoring_stays_ignored():
    """A command started ignoring SIGHUP (``nohup mcp-ref proxy --http ... &``) or SIGTERM kept
    it ignored only until a verb began: the stop handlers replaced it, and the terminal closing
    stopped the command.  Now a signal ignored when the verb begins stays ignored throughout."""
    from mcp_ref.workbench.cli import StopSignals

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        stop_signals = StopSignals()
        try:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN  # a stop signal now
            stop_signals.hold()
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        finally:
            stop_signals.restore()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_connect_that_starts_once_the_inspector_closes_launches_no_server(tmp_path):
    """A connect whose thread starts after the closing has begun launches nothing: a server it
    launched then would outlive the inspector's exit."""
    from mcp_ref.inspector.conversation import Conversation
    from mcp_ref.inspector.live import InspectedServer
    from mcp_ref.workbench.cli_grammar import parse

    launched = tmp_path / "launched"
    program = f"open({str(launched)!r}, 'w').close()"
    args = parse(["inspect", "--timeout", str(WAIT), "--", sys.executable, "-c", program])
    inspected = InspectedServer(args, Conversation(target="t", http=False))
    inspected.close()
    state = inspected.connect()
    assert not state["connected"]
    assert not launched.exists()
