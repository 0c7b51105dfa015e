"""The end of a stdio server's output (POSIX): a server that ends its own connection, one whose
stdin and stdout are one socket, one whose client reads neither its stdout nor its stderr.

2025-11-25 basic/lifecycle §Shutdown (stdio): "The server MAY initiate shutdown by closing its
output stream to the client and exiting."  2025-11-25 basic/transports §stdio: "The server MAY
write UTF-8 strings to its standard error (stderr) for logging purposes"; "Clients MAY capture,
forward, or ignore this logging".  Each server is a real process (``servers/stdio_ending.py``);
every wait is bounded (``WAIT``).
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Callable

import pytest
from conftest import SERVERS, WAIT, RawPeer, outcome_within, wait_pipe_full

from mcp_ref import Client, ConnectionClosed

pytestmark = pytest.mark.skipif(os.name != "posix", reason="poll() on stdio (POSIX)")

ENDING = [sys.executable, str(SERVERS / "stdio_ending.py")]
#: The timeout of a call that must end at once: far past the bound its outcome is waited for.
LONG = 10 * WAIT


def message(**fields) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode() + b"\n"


INITIALIZE = message(
    id="init",
    method="initialize",
    params={
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
)
INITIALIZED = message(method="notifications/initialized")


def call(request_id, name: str, **arguments) -> bytes:
    return message(
        id=request_id, method="tools/call", params={"name": name, "arguments": arguments}
    )


def send(server: subprocess.Popen, request: bytes) -> None:
    """Open the session with ``server`` (initialize, initialized) and send it ``request``."""
    server.stdin.write(INITIALIZE + INITIALIZED + request)
    server.stdin.flush()


def answered(server: subprocess.Popen) -> str:
    """The text of the answer ``server`` gives to ``send``'s request, after its initialize's."""
    assert json.loads(outcome_within(server.stdout.readline))["id"] == "init"
    answer = json.loads(outcome_within(server.stdout.readline))
    return answer["result"]["content"][0]["text"]


def ended(process: subprocess.Popen) -> int:
    """The exit status of ``process``, which must exit within WAIT (else it is killed)."""
    try:
        return process.wait(WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_server_that_closes_its_connection_ends_its_output_and_exits():
    """The client sees the end of its input at once (not at its own timeout, nor when it closes
    the server's stdin), and ``run_stdio()`` returns: the server exits by itself."""
    peer = RawPeer(ENDING)
    try:
        peer.initialize()
        peer.send(call(1, "goodbye"))
        assert peer.recv() is None  # the end of the server's output, within WAIT
        assert ended(peer.proc) == 0  # its stdin still open
        assert peer.stderr_done.wait(WAIT)
        assert b"ending: returned\n" in peer.stderr
    finally:
        peer.close()


def test_a_client_whose_server_closes_the_connection_fails_its_call_at_once():
    client = Client.stdio(ENDING, stderr="discard", timeout=LONG)
    try:
        outcome = outcome_within(lambda: client.call_tool("goodbye", {}))
        assert isinstance(outcome, ConnectionClosed), outcome
        assert client.session.wait_closed(WAIT)
    finally:
        client.close()
    assert client.session.transport.returncode == 0


def test_a_server_on_one_socket_for_stdin_and_stdout_ends_it_when_it_closes():
    """Closing the server's copy of its stdout sends nothing while stdin holds the same socket:
    it is shut down for writing, so the peer reads the end while the server still runs (a
    handler lingers)."""
    ours, theirs = socket.socketpair()
    server = subprocess.Popen(ENDING, stdin=theirs, stdout=theirs, stderr=subprocess.DEVNULL)
    theirs.close()
    try:
        ours.settimeout(WAIT)
        stream = ours.makefile("rb")
        ours.sendall(INITIALIZE)
        assert json.loads(stream.readline())["id"] == "init"
        ours.sendall(INITIALIZED + call(1, "goodbye", linger=LONG))
        assert stream.readline() == b""  # the end, within WAIT
        assert server.poll() is None
    finally:
        ours.close()
        server.kill()
        server.wait()


def read_available(fd: int) -> bytes:
    """What the pipe ``fd`` holds now, without waiting."""
    data = b""
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return data


def test_a_client_that_never_reads_the_servers_stderr_does_not_stall_it():
    """A tool that logs far more than the stderr pipe holds is answered, what found no room is
    dropped, and once there is room again a line says how much; the server exits when its
    input ends."""
    server = subprocess.Popen(
        ENDING, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        server.stdin.write(INITIALIZE)
        server.stdin.flush()
        assert json.loads(outcome_within(server.stdout.readline))["id"] == "init"
        server.stdin.write(INITIALIZED + call(1, "log_lots", lines=200))  # ~200 KiB
        server.stdin.flush()
        answer = json.loads(outcome_within(server.stdout.readline))
        assert answer["result"]["content"][0]["text"] == "logged"
        logged = read_available(server.stderr.fileno())  # (far less than was logged) room again
        assert b"line 0 " in logged and b"line 199 " not in logged
        server.stdin.write(call(2, "log_lots", lines=1))
        server.stdin.flush()
        assert json.loads(outcome_within(server.stdout.readline))["id"] == 2
        server.stdin.close()
        assert ended(server) == 0
        after = server.stderr.read()
        note = b"bytes written to stderr were dropped: its pipe was full and not read for 1 s\n"
        assert note in after
        assert after.index(note) < after.index(b"line 0 ")  # said before what comes next
    finally:
        ended(server)
        server.stdout.close()
        server.stderr.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIONREAD on a pipe (Linux)")
def test_a_server_whose_stdout_is_full_and_not_read_exits_when_it_closes():
    """The client stops reading the server's stdout once the pipe is full, and never closes the
    server's stdin: when the server ends the connection, neither an answer waiting for room nor
    the end of its output holds its exit."""
    server = subprocess.Popen(
        ENDING, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        server.stdin.write(INITIALIZE + INITIALIZED)
        server.stdin.flush()
        server.stdin.write(call(1, "echo", text="y" * 200_000))  # far more than the pipe holds
        server.stdin.flush()
        wait_pipe_full(server.stdout.fileno())
        server.stdin.write(call("bye", "goodbye"))
        server.stdin.flush()
        assert ended(server) == 0
    finally:
        ended(server)
        server.stdin.close()
        server.stdout.close()


def test_a_client_that_reads_the_servers_stderr_loses_none_of_it():
    """A burst fills the stderr pipe faster than the client reads it: the writes wait for room
    (the client reads, if late), so every line arrives and nothing is said dropped.  (The server's
    stall is 5 s here: the client starts reading only once the pipe is full, and a busy machine
    may hold it up for more than the default second.)"""
    server = subprocess.Popen(
        [*ENDING, "--stall", "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        send(server, call(1, "write_pages", count=100))
        wait_pipe_full(server.stderr.fileno())  # the burst waits for the client to read
        logged = pump(server.stderr)
        assert answered(server) == "written"
        server.stdin.close()
        assert ended(server) == 0
        text = outcome_within(logged)
        assert all(f"page {number:04d} ".encode() in text for number in range(100))
        assert b"dropped" not in text
    finally:
        ended(server)
        server.stdout.close()
        server.stderr.close()


def pump(stream) -> Callable[[], bytes]:
    """Read ``stream`` to its end on a thread: the function returned gives all it read."""
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(stream.read1, b"")), daemon=True)
    reader.start()

    def everything() -> bytes:
        reader.join()
        return b"".join(chunks)

    return everything


def test_the_dropped_bytes_are_said_when_the_server_exits():
    """The client reads none of a burst on stderr (bytes are dropped), then reads stderr once
    ``run()`` has returned, the server writing nothing more: the line saying how many bytes were
    dropped comes as the process exits."""
    note_read, note_write = os.pipe()
    server = subprocess.Popen(
        [*ENDING, "--quiet"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NOTE_FD": str(note_write)},
        pass_fds=[note_write],
    )
    os.close(note_write)
    try:
        server.stdin.write(INITIALIZE + INITIALIZED + call(1, "log_lots", lines=200))
        server.stdin.flush()
        assert json.loads(outcome_within(server.stdout.readline))["id"] == "init"
        answer = json.loads(outcome_within(server.stdout.readline))  # after the stall: dropped
        assert answer["result"]["content"][0]["text"] == "logged"
        server.stdin.close()
        assert outcome_within(lambda: os.read(note_read, 100)) == b"returned\n"
        logged = outcome_within(server.stderr.read)
        assert b"bytes written to stderr were dropped: its pipe was full and not read" in logged
        assert ended(server) == 0
    finally:
        ended(server)
        os.close(note_read)
        server.stdout.close()
        server.stderr.close()


def test_a_server_that_closes_its_connection_finishes_the_answer_being_written():
    """A long answer is being written to a client that reads it, late, when a handler ends the
    connection: the answer is finished (no half line), then the client sees the end."""
    server = subprocess.Popen(
        ENDING, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        server.stdin.write(INITIALIZE + INITIALIZED + call(1, "echo", text="y" * 500_000))
        server.stdin.flush()
        wait_pipe_full(server.stdout.fileno())  # the answer is being written
        server.stdin.write(call(2, "goodbye"))
        server.stdin.flush()
        assert outcome_within(server.stderr.readline) == b"ending: closing\n"
        output = outcome_within(server.stdout.read)  # to its end
        assert output.endswith(b"\n")
        ids = [json.loads(line)["id"] for line in output.splitlines()]
        assert ids == ["init", 1]
        assert ended(server) == 0
    finally:
        ended(server)
        server.stdout.close()
        server.stderr.close()


def test_a_server_without_stderr_writes_nothing_but_messages_to_stdout():
    """Descriptor 2 closed: what is written to descriptor 1 goes nowhere (2025-11-25
    basic/transports §stdio: "The server MUST NOT write anything to its stdout that is not a
    valid MCP message")."""
    without_stderr = "import os, sys; os.close(2); os.execv(sys.executable, sys.argv[1:])"
    server = subprocess.Popen(
        [sys.executable, "-c", without_stderr, *ENDING],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        server.stdin.write(INITIALIZE + INITIALIZED + call(1, "stray"))
        server.stdin.close()
        output = outcome_within(server.stdout.read)
        lines = [json.loads(line) for line in output.splitlines()]  # JSON, every one
        assert lines[-1]["result"]["content"][0]["text"] == "strayed"
        assert ended(server) == 0
    finally:
        ended(server)
        server.stdout.close()


RESTORING = [sys.executable, str(SERVERS / "stdio_restoring.py")]


def run_reporting(mode: str, **options) -> list[dict]:
    """Run ``stdio_restoring.py mode``: the lines it reported (one after each run)."""
    note_read, note_write = os.pipe()
    try:
        server = subprocess.Popen(
            [*RESTORING, mode],
            env={**os.environ, "NOTE_FD": str(note_write)},
            pass_fds=[note_write],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **options,
        )
        os.close(note_write)
        note_write = -1
        with os.fdopen(note_read, "rb") as notes:
            note_read = -1
            reported = outcome_within(notes.read)
        out, err = server.communicate(timeout=WAIT)
        assert server.returncode == 0, err
    finally:
        for end in (note_read, note_write):
            if end >= 0:
                os.close(end)
    return [json.loads(line) for line in reported.splitlines()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd (Linux)")
def test_run_stdio_leaves_the_process_as_it_found_it(tmp_path):
    """After ``run_stdio()`` returns, no descriptor is left open or changed (the copy of stdout,
    the wake pipe; descriptor 1 is stdout again), ``sys.stderr`` and the logging handlers are the
    former ones (``sys.stdout`` points at stderr, as it always has); a second run does the same."""
    requests = tmp_path / "requests"
    requests.write_bytes(INITIALIZE + INITIALIZED + call(1, "echo", text="hello"))
    with requests.open("rb") as stdin:
        reports = run_reporting("twice", stdin=stdin)
    assert [report["run"] for report in reports] == [1, 2]
    for report in reports:
        assert report["new"] == {}, report
        assert report["stderr_restored"] and report["stdout_is_stderr"], report


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd (Linux)")
def test_run_stdio_serves_the_streams_put_in_place_of_stdin_and_stdout():
    """A caller (an in-process test) that put its own streams in place of ``sys.stdin`` and
    ``sys.stdout`` is served on them: the process's own stdin is not read, nothing is rewired."""
    (report,) = run_reporting("swapped", stdin=subprocess.DEVNULL)
    assert report["answered"], report
    assert report["new"] == {} and report["stderr_restored"], report


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ (Linux)")
def test_a_client_that_reads_the_servers_stderr_slowly_but_steadily_loses_none_of_it():
    """The stderr pipe holds one page (4,096 bytes) and the client takes 128 bytes of it at a
    time, a little more often than every 0.1 s (the pace is the scenario): a page is freed only
    every 2.6 s, so poll() finds no room for longer than the stall (2 s here, so that only a
    reader held up for 2 s on a busy machine could lose a page), yet the client reads all the
    while: every page arrives, and nothing is said dropped."""
    text = read_slowly_while(call(1, "write_pages", count=2), "written", chunk=128)
    assert all(f"page {number:04d} ".encode() in text for number in range(2))
    assert b"dropped" not in text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ (Linux)")
def test_what_a_child_wrote_to_stdout_still_reaches_a_slow_reader_after_the_run():
    """A tool's child process writes 48 KiB to its stdout (the server's descriptor 1, passed on to
    stderr by a thread); the client reads stderr slowly but steadily (1,024 bytes a little more
    often than every 0.1 s, through a one-page pipe) and closes stdin once answered: the run ends
    with most of it still to pass on, and that is waited for while it moves.  It was given up a
    second after the run, and lost with no word."""
    text = read_slowly_while(call(1, "child", size=48 * 1024), "child done", chunk=1024)
    assert text.count(b"c") == 48 * 1024 and b"dropped" not in text


def read_slowly_while(request: bytes, answer_text: str, *, chunk: int) -> bytes:
    """Send ``request`` to a server whose stderr pipe holds one page and whose stall is 2 s,
    reading its stderr ``chunk`` bytes a little more often than every 0.1 s; check its answer's
    text is ``answer_text``, close its stdin, and give all it wrote to stderr once it exited."""
    read_end, write_end = os.pipe()
    fcntl = pytest.importorskip("fcntl")
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ: one page
    server = subprocess.Popen(
        [*ENDING, "--stall", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=write_end
    )
    os.close(write_end)
    pace = threading.Event()  # never set: the reader's pause between two reads

    def read_slowly() -> bytes:
        chunks = []
        while piece := os.read(read_end, chunk):
            chunks.append(piece)
            pace.wait(0.08)
        return b"".join(chunks)

    try:
        send(server, request)
        logged = pump_with(read_slowly)
        assert answered(server) == answer_text
        server.stdin.close()
        assert ended(server) == 0
        return outcome_within(logged)
    finally:
        ended(server)
        os.close(read_end)
        server.stdout.close()


def test_a_server_whose_stderr_is_ignored_exits_though_it_writes_as_the_interpreter_ends():
    """The client never reads stderr, so some of it was dropped; as the interpreter shuts down it
    puts ``sys.__stderr__`` back as ``sys.stderr``, and an object's ``__del__`` writes 5,000 bytes
    there: that write does not wait either (``sys.__stderr__`` is the dropping stream too), and the
    process exits.  It waited for ever on the full pipe."""
    server = subprocess.Popen(
        [*ENDING, "--last-words"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        send(server, call(1, "log_lots", lines=100))
        assert answered(server) == "logged"
        server.stdin.close()
        assert ended(server) == 0
    finally:
        ended(server)
        server.stdout.close()
        server.stderr.close()


def pump_with(read: Callable[[], bytes]) -> Callable[[], bytes]:
    """Run ``read`` on a thread: the function returned gives what it returned."""
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(read()), daemon=True)
    reader.start()

    def everything() -> bytes:
        reader.join()
        return result[0]

    return everything


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd (Linux)")
def test_run_stdio_that_raises_leaves_the_process_as_it_found_it():
    """The lifespan raises (its input still open, its reader waiting): ``run_stdio()`` raises,
    and leaves no descriptor open or changed, and ``sys.stderr`` as it was."""
    (report,) = run_reporting("failing", stdin=subprocess.PIPE)
    assert report["new"] == {} and report["stderr_restored"], report


def test_a_server_whose_stderr_is_ignored_exits_after_writing_much_to_it_after_run():
    """The client reads none of the server's stderr (bytes were dropped); once ``run_stdio()``
    has returned, the server writes far more than the pipe holds to ``sys.stderr``: it still
    exits (what finds no room is dropped, as during the run)."""
    server = subprocess.Popen(
        [*ENDING, "--loud"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        server.stdin.write(INITIALIZE + INITIALIZED + call(1, "log_lots", lines=200))
        server.stdin.flush()
        assert json.loads(outcome_within(server.stdout.readline))["id"] == "init"
        answer = json.loads(outcome_within(server.stdout.readline))  # after the stall: dropped
        assert answer["result"]["content"][0]["text"] == "logged"
        server.stdin.close()
        assert ended(server) == 0  # within WAIT, its stderr still not read
    finally:
        ended(server)
        server.stdout.close()
        server.stderr.close()


def test_a_child_process_writing_to_stdout_does_not_stall_a_server_whose_stderr_is_ignored():
    """A tool's child process writes far more than a pipe holds to its stdout, not captured (the
    server's descriptor 1), and the client never reads the server's stderr: the tool is
    answered, and the client's stdout carries nothing but messages."""
    server = subprocess.Popen(
        ENDING, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        send(server, call(1, "child", size=500_000))
        assert answered(server) == "child done"
        server.stdin.close()
        assert outcome_within(server.stdout.read) == b""  # nothing more: no stray output
        assert ended(server) == 0
    finally:
        ended(server)
        server.stdout.close()
        server.stderr.close()
