"""The stdio transport over real subprocesses and pipes.

Shutdown follows 2025-11-25 basic/lifecycle §Shutdown (stdio): close the
server's stdin, wait, SIGTERM, wait, SIGKILL — sent to the server's whole
process group, so the children of launchers (npx, uvx) are not orphaned.
Framing follows basic/transports §stdio: one JSON-RPC message per line, no
embedded newlines, nothing but messages on the server's stdout.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest
from conftest import (
    DEMO,
    SERVERS,
    WAIT,
    Collector,
    Workers,
    live_group_members,
    run_threads,
    wait_gone,
    wait_pipe_full,
    watch_lock,
)

from mcp_ref import Client, ConnectionClosed, RequestTimeout

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and signals are POSIX")

STUBBORN = [sys.executable, str(SERVERS / "stdio_stubborn.py")]
LAUNCHER = [sys.executable, str(SERVERS / "stdio_launcher.py")]
CHATTY = [sys.executable, str(SERVERS / "stdio_chatty.py")]
PROXY = [sys.executable, str(SERVERS / "stdio_proxy.py")]
LEFT_BEHIND = [sys.executable, str(SERVERS / "stdio_left_behind.py")]
SHUTDOWN = 0.5  # seconds per shutdown step in these tests


def _alive(pid: int) -> bool:
    """True while ``pid`` is a running (not zombie) process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else (a reused pid)
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True
    # An orphan that was killed stays a zombie until its new parent (init, or
    # whatever this container runs as pid 1) reaps it; it is dead all the same.
    return state != "Z"


def _read(path) -> str:
    return path.read_text() if path.exists() else ""


# -- shutdown order --------------------------------------------------------------------------------


@pytest.mark.slow
def test_well_behaved_server_exits_on_stdin_eof_with_status_0(connect):
    # A grace longer than the test's WAIT: close() returns within WAIT only if it waited on the
    # server's exit, not on the grace period.
    client = connect(DEMO, shutdown_timeout=2 * WAIT)
    transport = client.session.transport
    assert client.call_tool("echo", {"text": "x"}).text == "x"
    run_threads(lambda _: client.close(), 1)  # fails if close() is still running after WAIT
    # 0, not -SIGTERM/-SIGKILL: it ended by itself once stdin closed, before the grace ran out.
    assert transport.returncode == 0


def test_server_that_ignores_stdin_eof_gets_sigterm(tmp_path):
    marker = tmp_path / "marker"
    client = Client.stdio(
        [*STUBBORN, "linger", "--marker", str(marker)],
        stderr="capture",
        shutdown_timeout=SHUTDOWN,
        timeout=WAIT,
    )
    transport = client.session.transport
    assert client.call_tool("whoami").text == str(transport.process.pid)
    began = time.monotonic()
    client.close()
    elapsed = time.monotonic() - began
    # stdin was closed first (the server saw EOF), then, after the grace period, SIGTERM.
    assert _read(marker).split() == ["eof", "SIGTERM"]
    assert elapsed >= SHUTDOWN
    assert transport.returncode == 0  # its SIGTERM handler exited 0: SIGKILL was not needed
    assert "stubborn: stdin ended, staying alive" in transport.stderr_lines


@pytest.mark.slow
def test_server_that_ignores_sigterm_gets_sigkill(tmp_path):
    marker = tmp_path / "marker"
    client = Client.stdio(
        [*STUBBORN, "ignore-term", "--marker", str(marker)],
        stderr="capture",
        shutdown_timeout=SHUTDOWN,
        timeout=WAIT,
    )
    transport = client.session.transport
    began = time.monotonic()
    client.close()
    elapsed = time.monotonic() - began
    assert transport.returncode == -9
    assert _read(marker).split() == ["eof", "SIGTERM"]  # it was asked nicely first
    assert elapsed >= 2 * SHUTDOWN


# -- a server that does not read its input ---------------------------------------------------------

DEAF = [sys.executable, str(SERVERS / "stdio_deaf.py")]
BIG = "a" * 2_000_000  # an argument far larger than a pipe holds


@pytest.mark.slow
def test_a_request_the_server_never_reads_times_out():
    # 2025-11-25 basic/lifecycle §Timeouts: "implementations SHOULD establish timeouts for all sent
    # requests": the timeout holds while the request waits to be written, too.
    client = Client.stdio(
        DEAF, era="handshake", timeout=0.5, stderr="discard", shutdown_timeout=SHUTDOWN
    )
    transport = client.session.transport

    def call(_):
        with pytest.raises(RequestTimeout, match="not sent within its timeout"):
            client.call_tool("echo", {"text": BIG})

    run_threads(call, 1)
    run_threads(lambda _: client.close(), 1)
    assert transport.returncode is not None  # stdin closed, then SIGTERM: it is gone


@pytest.mark.slow
def test_a_request_whose_timeout_progress_resets_is_not_sent_past_its_first_timeout():
    # No progress can come for a request not yet sent: its write waits its timeout, not the total
    # cap that progress could have reached (here 60 s, past the test's bound).
    client = Client.stdio(DEAF, era="handshake", stderr="discard", shutdown_timeout=SHUTDOWN)
    options = {"timeout": 0.3, "reset_timeout_on_progress": True, "max_total_timeout": 60}

    def call(_):
        with pytest.raises(RequestTimeout, match="not sent within its timeout"):
            client.call_tool("echo", {"text": BIG}, **options)

    try:
        run_threads(call, 1)
    finally:
        run_threads(lambda _: client.close(), 1)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIONREAD on a pipe (Linux)")
def test_close_ends_a_server_that_stopped_reading_while_a_write_waits():
    # 2025-11-25 basic/lifecycle §Shutdown (stdio): close its stdin, wait, SIGTERM, wait, SIGKILL;
    # the cancellations close() sends first for the pending requests cannot stand in the way.
    client = Client.stdio(
        DEAF, era="handshake", timeout=None, stderr="discard", shutdown_timeout=SHUTDOWN
    )
    transport = client.session.transport
    pending = [client.session.send_request("tools/list") for _ in range(3)]
    writers = Workers(lambda _: client.call_tool("echo", {"text": BIG}), 1).start()
    wait_pipe_full(transport.process.stdin.fileno())
    run_threads(lambda _: client.close(), 1)
    assert transport.returncode is not None
    with pytest.raises(AssertionError, match="ConnectionClosed"):
        writers.join()  # the waiting writer gave up: the connection closed
    for request in pending:
        with pytest.raises(ConnectionClosed):
            request.result()


def _fill_pipe(transport) -> None:
    """Fill the server's stdin pipe with whole, valid lines, each shorter than a cancellation, so
    that not even a cancellation fits in what is left."""
    line = b'{"jsonrpc":"2.0","method":"x/y"}\n'
    with transport.write_lock:
        while True:
            try:
                os.write(transport.fd, line)
            except BlockingIOError:
                return


@pytest.mark.slow
def test_a_timed_out_request_whose_cancellation_cannot_be_written_ends_its_wait():
    # 2025-11-25 basic/lifecycle §Timeouts: "SHOULD establish timeouts for all sent requests"; a
    # cancellation is a notification, "fire and forget" (basic/utilities/cancellation §Error
    # Handling): one that cannot be written soon is dropped.  Each request is written, then the pipe fills: its timeout sends notifications/cancelled,
    # which cannot be written; the callers get RequestTimeout all the same (not at close()).
    client = Client.stdio(
        DEAF, era="handshake", timeout=None, stderr="discard", shutdown_timeout=SHUTDOWN
    )
    transport = client.session.transport
    pending = [client.session.send_request("tools/list", timeout=0.2) for _ in range(3)]
    _fill_pipe(transport)

    def wait(i):
        with pytest.raises(RequestTimeout):
            pending[i].result()

    try:
        run_threads(wait, len(pending))
    finally:
        run_threads(lambda _: client.close(), 1)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIONREAD on a pipe (Linux)")
def test_close_finishes_a_line_begun_while_the_server_reads(tmp_path):
    # 2025-11-25 basic/transports §stdio: "The client MUST NOT write anything to the server's stdin
    # that is not a valid MCP message": a request longer than the pipe, half written when close()
    # begins, is finished once the server reads again (here: only after close() has begun).
    report = tmp_path / "report.json"
    server = [sys.executable, str(SERVERS / "stdio_reads_on_signal.py"), str(report)]
    client = Client.stdio(server, era="handshake", timeout=None, stderr="discard")
    transport = client.session.transport
    writers = Workers(lambda _: client.call_tool("echo", {"text": BIG}), 1).start()
    wait_pipe_full(transport.process.stdin.fileno())
    began = watch_lock(transport, "_close_lock")  # closing is set under it
    closer = Workers(lambda _: client.close(), 1).start()
    assert began(lambda: transport.closing), "close() did not begin"
    os.kill(transport.process.pid, signal.SIGUSR1)  # now it reads
    closer.join()
    with pytest.raises(AssertionError, match="ConnectionClosed"):
        writers.join()  # written in full; its answer never came: the connection closed
    assert json.loads(report.read_text()) == {
        "methods": ["initialize", "notifications/initialized", "tools/call"],
        "rest": 0,
    }


@pytest.mark.slow
def test_server_runs_in_its_own_process_group(connect):
    client = connect(DEMO)
    pid = client.session.transport.process.pid
    assert os.getpgid(pid) == pid  # the leader of a new group
    assert os.getpgid(pid) != os.getpgid(0)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["linger", "ignore-term"])
def test_no_orphans_behind_a_launcher(tmp_path, mode):
    """npx-style: the launcher dies on SIGTERM without passing it on; the real server must still go."""
    pidfile = tmp_path / "pid"
    marker = tmp_path / "marker"
    client = Client.stdio(
        [*LAUNCHER, *STUBBORN, mode, "--pidfile", str(pidfile), "--marker", str(marker)],
        stderr="capture",
        shutdown_timeout=SHUTDOWN,
        timeout=WAIT,
    )
    launcher = client.session.transport.process
    # The handshake was answered by the grandchild, which wrote its pid before serving.
    grandchild = int(pidfile.read_text())
    assert grandchild != launcher.pid
    assert client.call_tool("whoami").text == str(grandchild)
    assert os.getpgid(grandchild) == launcher.pid != os.getpgid(0)
    try:
        client.close()
        assert launcher.returncode == -15  # the launcher died of the group's SIGTERM
        assert wait_gone(grandchild), f"the real server (pid {grandchild}) outlived client.close()"
        assert _read(marker).split()[:2] == ["eof", "SIGTERM"]
        assert live_group_members(launcher.pid) == []  # nothing left running in the group
    finally:
        if _alive(grandchild):  # do not leave it behind when the test fails
            os.kill(grandchild, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.skipif(
    not os.path.isdir("/proc/self"), reason="descendants are found through /proc (Linux)"
)
def test_a_descendant_that_left_the_process_group_is_ended_too(tmp_path):
    """The launcher's child calls setsid: signals to the group miss it, so close() finds it by parent links."""
    pidfile = tmp_path / "pid"
    marker = tmp_path / "marker"
    client = Client.stdio(
        [
            *LAUNCHER,
            "--setsid",
            *STUBBORN,
            "linger",
            "--pidfile",
            str(pidfile),
            "--marker",
            str(marker),
        ],
        stderr="capture",
        shutdown_timeout=SHUTDOWN,
        timeout=WAIT,
    )
    launcher = client.session.transport.process
    grandchild = int(pidfile.read_text())
    assert (
        os.getsid(grandchild) == grandchild != os.getsid(launcher.pid)
    )  # out of the launcher's session and group
    try:
        client.close()
        assert wait_gone(grandchild), (
            f"the server in its own session (pid {grandchild}) outlived client.close()"
        )
        assert _read(marker).split()[:2] == ["eof", "SIGTERM"]  # asked nicely first
    finally:
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def _parent(pid: int) -> int:
    """The parent pid of ``pid`` (Linux: /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="found through /proc (Linux)")
@pytest.mark.parametrize("orphan", [False, True], ids=["its-parent-lives", "its-parent-exited"])
def test_a_process_the_server_started_in_a_session_of_its_own_is_ended_at_close(tmp_path, orphan):
    """A server's tool starts a process that calls os.setsid(): out of the group's reach.  Ended
    at close(), also when the process that started it has exited (a double fork: no parent link)."""
    pidfile = tmp_path / "pid"
    client = Client.stdio(LEFT_BEHIND, stderr="capture", shutdown_timeout=SHUTDOWN, timeout=WAIT)
    bystander = Client.stdio(LEFT_BEHIND, stderr="capture", shutdown_timeout=SHUTDOWN, timeout=WAIT)
    server = client.session.transport.process.pid
    spawned = client.call_tool("spawn_session_leader", {"pidfile": str(pidfile), "orphan": orphan})
    leader = int(spawned.text)
    try:
        assert leader == int(pidfile.read_text())
        assert os.getsid(leader) == leader != os.getsid(server)  # its own session and process group
        assert (_parent(leader) == server) is not orphan
        client.close()
        assert wait_gone(leader), f"the session leader (pid {leader}) outlived client.close()"
        # Only that server's tree: another client's server, started later, still serves.
        assert "leave_reporter" in [tool.name for tool in bystander.list_tools()]
    finally:
        bystander.close()
        if _alive(leader):  # do not leave it behind when the test fails
            os.kill(leader, signal.SIGKILL)


# -- progress ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_no_progress_reaches_the_client_after_the_answer():
    """2025-11-25 basic/utilities/progress §Behavior Requirements: progress notifications "MUST
    stop after completion", also those of a thread the handler left behind (released only once the
    client has the answer; the second call's answer comes after everything that thread sent)."""
    wire = Collector()
    with Client.stdio(LEFT_BEHIND, stderr="capture", trace=wire, timeout=WAIT) as client:
        assert client.call_tool("leave_reporter", on_progress=Collector()).text == "answered"
        assert client.call_tool("release_reporter").text == "0"  # the server sent none of the 500
    sent = [json.loads(data) for direction, data in wire if direction == "-->"]
    call = next(item for item in sent if item.get("params", {}).get("name") == "leave_reporter")
    token = call["params"]["_meta"]["progressToken"]
    received = [json.loads(data) for direction, data in wire if direction == "<--"]
    answer = next(index for index, item in enumerate(received) if item.get("id") == call["id"])
    progress = [
        index
        for index, message in enumerate(received)
        if message.get("method") == "notifications/progress"
        and message["params"]["progressToken"] == token
    ]
    assert progress and max(progress) < answer  # the one sent while it ran; none after its answer


# -- stderr --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_stderr_capture_keeps_the_servers_lines():
    client = Client.stdio(CHATTY, stderr="capture", timeout=WAIT)
    assert client.call_tool("shout", {"text": "hey"}).text == "HEY"
    client.close()  # waits for the server to exit and for its stderr to be read to the end
    lines = list(client.session.transport.stderr_lines)
    assert lines[0] == "chatty: starting"
    assert "chatty: shout hey" in lines
    assert "hey" in lines  # the print() in the tool


@pytest.mark.slow
def test_stderr_inherit_goes_to_our_stderr(capfd):
    client = Client.stdio(CHATTY, stderr="inherit", timeout=WAIT)
    assert client.session.transport.process.stderr is None
    client.call_tool("shout", {"text": "inherited"})
    client.close()  # the server has exited, so all it wrote to the shared fd 2 is there
    err = capfd.readouterr().err
    assert "chatty: starting" in err
    assert "chatty: shout inherited" in err
    assert not client.session.transport.stderr_lines


@pytest.mark.slow
def test_stderr_discard(capfd):
    client = Client.stdio(CHATTY, stderr="discard", timeout=WAIT)
    assert (
        client.call_tool("shout", {"text": "gone"}).text == "GONE"
    )  # writing to stderr did not fail
    client.close()
    err = capfd.readouterr().err
    assert "chatty" not in err and "gone" not in err
    assert not client.session.transport.stderr_lines


@pytest.mark.slow
def test_stderr_callable_gets_each_line():
    lines = Collector()  # called with each line

    with Client.stdio(CHATTY, stderr=lines, timeout=WAIT) as client:
        client.call_tool("shout", {"text": "cb"})
        lines.wait_until(lambda got: "chatty: shout cb" in got)
    assert lines[0] == "chatty: starting"
    assert "cb" in lines
    assert not client.session.transport.stderr_lines  # a callable replaces the buffer


def test_bad_stderr_mode_is_rejected():
    with pytest.raises(ValueError):
        Client.stdio(DEMO, stderr="syslog")
    with pytest.raises(TypeError):
        Client.stdio("python server.py")  # a string is not a command list


# -- framing -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_print_in_a_tool_does_not_corrupt_stdout(raw_peer):
    peer = raw_peer(CHATTY)
    assert peer.initialize()["result"]["serverInfo"]["name"] == "chatty"
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "shout", "arguments": {"text": "noise"}},
        }
    )
    peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    replies = {}
    while len(replies) < 2:
        line = peer.lines.get(timeout=WAIT)
        assert line is not None, "stdout ended early"
        message = json.loads(line)  # every line on stdout is a JSON-RPC message; "noise" is not
        replies[message["id"]] = message
    assert replies[1]["result"]["content"] == [{"type": "text", "text": "NOISE"}]
    assert replies[2]["result"] == {}
    assert peer.close() == 0
    assert b"noise\n" in b"".join(peer.stderr)


@pytest.mark.slow
def test_server_answers_what_it_received_before_stdin_eof(raw_peer):
    peer = raw_peer(DEMO)
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
    )
    peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "count_slowly", "arguments": {"steps": 3}},
        }
    )
    peer.proc.stdin.close()  # at once: the tool has barely started
    seen = []
    while True:
        message = peer.recv()
        if message is None:
            break
        seen.append(message)
    ids = [m.get("id") for m in seen]
    assert ids == [0, 1], seen
    assert seen[1]["result"]["content"] == [{"type": "text", "text": "counted to 3"}]
    assert peer.proc.wait(WAIT) == 0


def input_ended_while_running(raw_peer, tool: str, arguments: dict):
    """A session_server.py peer whose input ends while ``tool`` (called as request 1, with a
    progress token) runs: its first progress report has been read."""
    peer = raw_peer([sys.executable, str(SERVERS / "session_server.py")])
    assert "result" in peer.initialize()
    params = {"name": tool, "arguments": arguments, "_meta": {"progressToken": 1}}
    peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    assert peer.recv()["method"] == "notifications/progress"  # the tool runs
    peer.proc.stdin.close()
    return peer


@pytest.mark.slow
def test_a_server_whose_input_ends_cancels_what_still_runs_and_exits(raw_peer):
    """2026-07-28 basic/transports/stdio §Shutdown: "Servers SHOULD exit promptly when their
    standard input is closed".  A request still running ENDING_GRACE after the end of input is
    cancelled (here a tool that waits 30 s for its cancellation): no answer, and the server exits
    by itself, long before the tool's 30 s (it waited for them)."""
    peer = input_ended_while_running(raw_peer, "block", {"key": "k"})
    assert peer.proc.wait(WAIT) == 0
    assert peer.recv() is None  # nothing more: a cancelled request is not answered


@pytest.mark.slow
def test_an_answer_a_handler_gives_after_the_end_of_input_cancelled_it_is_sent(raw_peer):
    """The server, not the client, cancelled the request ENDING_GRACE after its input ended: a
    handler that still answers (it waited for it anyway) has its answer sent.  2025-11-25
    basic/utilities/cancellation's "SHOULD NOT send a response" is for the peer's cancellation."""
    peer = input_ended_while_running(raw_peer, "answers_all_the_same", {})
    answer = peer.recv()
    assert answer["id"] == 1
    assert answer["result"]["content"] == [{"type": "text", "text": "finished all the same"}]
    assert peer.proc.wait(WAIT) == 0
    assert peer.recv() is None


@pytest.mark.slow
def test_embedded_newlines_are_escaped_and_round_trip(wire):
    raw: list[bytes] = []

    def trace(direction, data):
        raw.append(data)
        wire(direction, data)

    text = 'line one\nline two\r\n\ttabbed \u2028 "quoted" \\ end\n'
    with Client.stdio(DEMO, stderr="capture", trace=trace, timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": text}).text == text
    assert raw and all(b"\n" not in data and b"\r" not in data for data in raw)
    assert any(b"line one\\nline two\\r\\n" in data for data in raw)


@pytest.mark.slow
def test_raw_response_to_multiline_text_is_one_line(raw_peer):
    peer = raw_peer(DEMO)
    peer.initialize()
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "a\nb\n"}},
        }
    )
    line = peer.lines.get(timeout=WAIT)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line)["result"]["content"][0]["text"] == "a\nb\n"


@pytest.mark.slow
def test_server_accepts_crlf_line_endings(raw_peer):
    peer = raw_peer(DEMO)
    init = {
        "jsonrpc": "2.0",
        "id": "i",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "crlf", "version": "0"},
        },
    }
    peer.send(json.dumps(init).encode() + b"\r\n")
    assert peer.recv()["result"]["protocolVersion"] == "2025-11-25"
    peer.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\r\n')
    peer.send(
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "crlf"}}}\r\n'
    )
    reply = peer.recv()
    assert reply["id"] == 2 and reply["result"]["content"][0]["text"] == "crlf"
    assert peer.close() == 0


@pytest.mark.slow
def test_client_accepts_crlf_line_endings(connect, tmp_path):
    # The proxy turns every LF the demo server writes into CRLF.
    client = connect([*PROXY, "--crlf", "--", *DEMO])
    assert client.server_info.name == "mcp-ref-demo"
    assert client.call_tool("echo", {"text": "over crlf"}).text == "over crlf"
    assert len(client.list_tools()) > 5
    client.close()
    assert client.session.transport.returncode == 0


# -- env and cwd ---------------------------------------------------------------------------------

UNTESTED = [sys.executable, str(SERVERS / "untested_server.py")]


@pytest.mark.slow
def test_env_reaches_the_server_on_top_of_ours(connect, monkeypatch):
    monkeypatch.setenv("MCP_REF_TEST_SHADOWED", "ours")
    monkeypatch.setenv("MCP_REF_TEST_INHERITED", "inherited")
    client = connect(
        UNTESTED, env={"MCP_REF_TEST_ADDED": "added", "MCP_REF_TEST_SHADOWED": "theirs"}
    )
    assert client.call_tool("env", {"name": "MCP_REF_TEST_ADDED"}).text == "added"
    assert client.call_tool("env", {"name": "MCP_REF_TEST_SHADOWED"}).text == "theirs"
    assert (
        client.call_tool("env", {"name": "MCP_REF_TEST_INHERITED"}).text == "inherited"
    )  # merged, not replaced
    plain = connect(UNTESTED)
    assert plain.call_tool("env", {"name": "MCP_REF_TEST_ADDED"}).text == "<unset>"
    assert plain.call_tool("env", {"name": "MCP_REF_TEST_SHADOWED"}).text == "ours"


@pytest.mark.slow
def test_cwd_sets_the_servers_working_directory(connect, tmp_path):
    client = connect(UNTESTED, cwd=str(tmp_path))
    assert client.call_tool("cwd").text == os.path.realpath(tmp_path)
    assert connect(UNTESTED).call_tool("cwd").text == os.getcwd()  # by default, ours
