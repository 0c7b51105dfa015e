"""Stdio peers that misbehave in ways that once left a request, or a whole server, waiting without
end: answers that are malformed or too large, a server that exits while a process it started holds
its stdout, a caller interrupted by Ctrl-C, and a client that stops reading the server's stdout,
or reads it only after a while.

Each side is a real process over real pipes: a hand-written raw server
(``servers/stdio_odd_answers.py``, no mcp_ref) for the client's cases, the demo server for the
server's.  Every wait is bounded (``WAIT``); a call that must fail at once has a timeout far
past that bound (``LONG``), so failing at its timeout would fail the test.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

import pytest
from conftest import DEMO, SERVERS, WAIT, RawPeer, outcome_within, wait_pipe_full

from mcp_ref import Client, ConnectionClosed, InvalidRequest, LimitExceeded
from mcp_ref.session import CLOSING_WRITES

pytestmark = pytest.mark.skipif(os.name != "posix", reason="poll() on pipes (POSIX)")

ODD = [sys.executable, str(SERVERS / "stdio_odd_answers.py")]
#: The timeout of a call that must fail at once: far past the bound its outcome is waited for.
LONG = 10 * WAIT


def odd_client(**options) -> Client:
    return Client.stdio(ODD, era="handshake", stderr="capture", timeout=WAIT, **options)


def received(client: Client) -> list[dict]:
    """What the raw server read, in order (once the client is closed: every line)."""
    lines = client.session.transport.stderr_lines
    return [json.loads(line[4:]) for line in lines if line.startswith("got ")]


def answered_back(messages: list[dict]) -> list[dict]:
    """The answers among ``messages`` (the raw server never asks: none is due)."""
    return [m for m in messages if "method" not in m]


def still_serves(client: Client) -> None:
    answer = client.call_tool("echo", {"text": "still here"}, timeout=WAIT)
    assert answer.content[0].text == "still here"


# -- malformed answers (JSON-RPC 2.0 §5: a Response is never answered) ----------------------------


@pytest.mark.parametrize("name", ["both", "no-jsonrpc"])
def test_a_malformed_answer_fails_its_call_at_once_and_is_not_answered_back(name):
    client = odd_client()
    try:
        outcome = outcome_within(lambda: client.call_tool(name, {}, timeout=LONG))
        assert isinstance(outcome, InvalidRequest), outcome
        assert "the peer's answer is not valid" in str(outcome)
        still_serves(client)
    finally:
        client.close()
    assert answered_back(received(client)) == []


def test_an_answer_with_a_null_id_is_not_answered_back():
    with odd_client() as client:
        assert client.call_tool("null-id", {}).content[0].text == "after a null id"
        still_serves(client)
    assert answered_back(received(client)) == []


def test_malformed_answers_are_flagged_as_answers_by_the_parser():
    from mcp_ref.jsonrpc import parse

    for answer in (
        {"jsonrpc": "2.0", "id": 4, "result": {}, "error": {"code": 1, "message": "x"}},
        {"id": 4, "result": {}},
        {"jsonrpc": "1.0", "id": 4, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": None, "result": {}},
        {"jsonrpc": "2.0", "id": True, "error": {"code": 1, "message": "x"}},
    ):
        with pytest.raises(InvalidRequest) as info:
            parse(json.dumps(answer))
        assert info.value.answer, answer
    for not_an_answer in (
        {"jsonrpc": "1.0", "id": 4, "method": "ping"},
        {"jsonrpc": "2.0", "id": 4},
        {"jsonrpc": "2.0", "id": 4, "method": 5, "result": {}},
    ):
        with pytest.raises(InvalidRequest) as info:
            parse(json.dumps(not_an_answer))
        assert not info.value.answer, not_an_answer


def test_a_malformed_answer_in_a_batch_fails_its_request_at_once_and_is_not_answered_back():
    """2025-03-26 basic §Batching (batches allowed): the client answers the server's
    ``roots/list`` with a one-item batch holding a malformed answer (a result that is not an
    object).  Nothing answers it (JSON-RPC 2.0 §5): the server's next line is its answer to the
    tool call, which failed at once (the ``roots/list`` timeout is far past ``WAIT``)."""
    peer = RawPeer()
    try:
        params = {
            "protocolVersion": "2025-03-26",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        peer.send_json({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params})
        assert peer.recv()["id"] == "init"
        peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "show_roots", "arguments": {}}
        peer.send_json({"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": call})
        ask = peer.recv()
        assert ask["method"] == "roots/list"
        peer.send_json([{"jsonrpc": "2.0", "id": ask["id"], "result": "not an object"}])
        answer = peer.recv()
        assert isinstance(answer, dict) and answer.get("id") == "call", answer
        assert "the peer's answer is not valid" in json.dumps(answer)
    finally:
        peer.close()


# -- an answer larger than max_message_size --------------------------------------------------------


def test_an_answer_past_max_message_size_fails_its_call_at_once_and_is_not_answered_back():
    client = odd_client(max_message_size=10_000)
    try:
        outcome = outcome_within(lambda: client.call_tool("big", {"size": 20_000}, timeout=LONG))
        assert isinstance(outcome, LimitExceeded), outcome
        assert "limit of 10000 bytes (max_message_size)" in str(outcome)
        assert outcome.data == {"limit": 10_000}
        still_serves(client)
    finally:
        client.close()
    assert answered_back(received(client)) == []


# -- a server that exits (leaving a process that holds its stdout, or not) -------------------------


@pytest.mark.parametrize("child", [True, False])
def test_a_server_that_exits_fails_the_call_at_once_naming_its_status(child):
    """The server exits (status 3) on the call: the call fails naming the status, and the
    connection ends.  With a process it started that still holds its stdout, no end of input
    comes: the client sees the exit itself, and ends that process too.  Without, the end of input
    comes first, and the client waits a little for the status (it gave none)."""
    client = odd_client()
    try:
        call = {"seconds": 10 * LONG if child else 0}
        outcome = outcome_within(lambda: client.call_tool("exit", call, timeout=LONG))
        assert isinstance(outcome, ConnectionClosed), outcome
        assert "the server exited with status 3" in str(outcome)
        assert client.session.wait_closed(WAIT)
    finally:
        client.close()


def test_a_server_that_exits_before_answering_initialize_is_named_once(tmp_path):
    """The client could not be made: its error names the server's exit status, once."""
    script = tmp_path / "exits.py"
    script.write_text("import sys\nsys.stdin.buffer.readline()\nsys.exit(3)\n")
    command = [sys.executable, str(script)]
    with pytest.raises(ConnectionClosed) as failed:
        Client.stdio(command, era="handshake", stderr="discard", timeout=LONG)
    assert str(failed.value).count("exited with status 3") == 1, failed.value


# -- a caller interrupted (Ctrl-C) while it waits ----------------------------------------------------


INTERRUPTED = """
import json, signal, sys, threading, time
from mcp_ref import Client

received = []  # what the server read (its stderr: "got <line>")
waiting = threading.Event()  # set as the caller starts to wait for the answer
interrupted = threading.Event()


def ctrl_c(signum, frame):  # Ctrl-C, once
    if not interrupted.is_set():
        interrupted.set()
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, ctrl_c)


class Announcing(threading.Condition):
    def wait(self, timeout=None):
        waiting.set()
        return super().wait(timeout)


def line(text):
    if text.startswith("got "):
        received.append(json.loads(text[4:]))


def interrupt():
    # SIGINT to the main thread once it waits (a signal sent to the process may go to another
    # thread, which does not wake it), and again until it is handled: one that comes just before
    # the main thread blocks in its lock is handled only when the lock wakes (a CPython race)
    deadline = time.monotonic() + float(sys.argv[2])
    if waiting.wait(float(sys.argv[2])):
        while time.monotonic() < deadline:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            if interrupted.wait(0.1):
                return


client = Client.stdio([sys.executable, sys.argv[1]], era="handshake", stderr=line)
call = client.session.send_request(
    "tools/call", {"name": "silent", "arguments": {}}, timeout=None
)
call._condition = Announcing()  # (no one waits on it yet, and no answer comes)
threading.Thread(target=interrupt, daemon=True).start()
try:
    call.result()
    outcome = "answered"
except KeyboardInterrupt:
    outcome = "interrupted"
left = list(client.session._pending)
client.close()
print(json.dumps({"outcome": outcome, "left": left, "received": received}))
"""


def test_ctrl_c_while_a_call_waits_forgets_it_and_cancels_it_at_the_server(tmp_path):
    """KeyboardInterrupt in the waiting caller (a real SIGINT, in a process of its own: its main
    thread; sent once the caller waits on the request's Future) is raised as it is; the request
    leaves the table of those awaiting an answer, and the server is sent
    ``notifications/cancelled`` for it then (not only as the client closes)."""
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED)
    done = subprocess.run(
        [sys.executable, str(script), ODD[1], str(WAIT)],
        capture_output=True,
        text=True,
        timeout=3 * WAIT,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert (report["outcome"], report["left"]) == ("interrupted", [])
    messages = report["received"]
    call = next(m for m in messages if m.get("method") == "tools/call")
    cancels = [m for m in messages if m.get("method") == "notifications/cancelled"]
    assert cancels == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": call["id"], "reason": "interrupted"},
        }
    ]


# -- a client that stops reading the server's stdout -----------------------------------------------


def test_a_server_whose_client_stops_reading_exits_when_its_input_ends():
    """2026-07-28 basic/transports/stdio §Shutdown: "Servers SHOULD exit promptly when their
    standard input is closed".  The client asks for answers far larger than the pipe holds and
    never reads them, pings (answered by the server's reader thread), then closes the server's
    stdin: no handler and not the reader stays in a write that can never end."""
    server = subprocess.Popen(
        DEMO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:

        def send(message: dict) -> None:
            server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
            server.stdin.flush()

        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "deaf", "version": "0"},
        }
        send({"id": "init", "method": "initialize", "params": params})
        send({"method": "notifications/initialized"})
        big = "x" * 200_000
        for n in range(8):
            arguments = {"name": "echo", "arguments": {"text": big}}
            send({"id": n, "method": "tools/call", "params": arguments})
        for n in range(8):
            send({"id": f"ping-{n}", "method": "ping"})
        server.stdin.close()
        assert server.wait(WAIT) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()


BIG_ANSWERS = [sys.executable, str(SERVERS / "stdio_big_answers.py")]
#: The length of an answer far larger than a pipe holds.
BIG_ANSWER = 1_000_000


class RawClient:
    """A stdio client of a server process that writes and reads raw lines, and reads the server's
    stdout only when the test says so (``read_until``)."""

    def __init__(self, *arguments: str):
        self.server = subprocess.Popen(
            [*BIG_ANSWERS, *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.output = b""  # what was read of the server's stdout
        self.ended = False  # its end was read

    def send(self, message: dict) -> None:
        self.server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.server.stdin.flush()

    def start(self) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        self.send({"id": "init", "method": "initialize", "params": params})
        self.read_until(lambda: self.answers() != [])
        self.send({"method": "notifications/initialized"})

    def read_until(self, done) -> None:
        """Read the server's stdout until ``done()`` or its end, within ``WAIT``."""
        deadline = time.monotonic() + WAIT
        fd = self.server.stdout.fileno()
        while not done() and not self.ended:
            left = deadline - time.monotonic()
            assert left > 0, f"still waiting after {WAIT} s; read {len(self.output)} bytes"
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 1 << 20)
                self.output += chunk
                self.ended = not chunk

    def answers(self) -> list[dict]:
        """The whole lines read so far, decoded."""
        return [json.loads(line) for line in self.output.split(b"\n")[:-1]]

    def wait_pipe_full(self) -> None:
        """Wait (bounded) until the server's stdout pipe is full."""
        wait_pipe_full(self.server.stdout.fileno())

    def end(self) -> None:
        if self.server.poll() is None:
            self.server.kill()
        self.server.wait(WAIT)
        for pipe in (self.server.stdin, self.server.stdout, self.server.stderr):
            pipe.close()


def big_call(request_id: int) -> dict:
    return {
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "big", "arguments": {"n": BIG_ANSWER}},
    }


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIONREAD on a pipe (Linux)")
def test_a_server_waits_for_a_client_busy_a_while_before_it_reads():
    """A client that reads its stdout, but is busy a while (an SDK client running a sampling
    callback in its receive loop) longer than ``CLOSING_WRITES``, with the pipe full: while the
    server's input is open it waits for room as long as it takes, so no answer is cut (the one
    being written) or dropped (the one waiting for the write lock behind it)."""
    client = RawClient()
    try:
        client.start()
        client.send(big_call(1))
        client.send(big_call(2))
        client.wait_pipe_full()
        time.sleep(1.5 * CLOSING_WRITES)  # the client is busy: not a wait for an event
        client.send({"id": 3, "method": "ping"})
        client.read_until(lambda: len(client.answers()) == 4)
        answers = {answer["id"]: answer for answer in client.answers()}
        assert sorted(answers, key=str) == [1, 2, 3, "init"]
        for request_id in (1, 2):
            assert answers[request_id]["result"]["content"][0]["text"] == "x" * BIG_ANSWER
        client.server.stdin.close()
        assert client.server.wait(WAIT) == 0
    finally:
        client.end()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIONREAD on a pipe (Linux)")
def test_an_answer_cut_at_the_end_of_input_closes_the_servers_stdout():
    """The client closes the server's stdin, never reading a long answer begun: the server cuts
    it off (``CLOSING_WRITES`` after the end of its input) and closes its stdout, not the file
    object alone (``sys.stdout.buffer`` does not own its descriptor), so the client sees the end of
    its input although the server's process is still alive (``--linger``): nothing follows the
    half line."""
    client = RawClient("--linger")
    try:
        client.start()
        client.send(big_call(1))
        client.wait_pipe_full()
        client.server.stdin.close()
        # Not a byte read before the session has ended (its handlers too): "served" on stderr.
        assert select.select([client.server.stderr], [], [], WAIT)[0], "the session goes on"
        assert client.server.stderr.readline() == b"served\n"
        client.read_until(lambda: False)  # to the end of the server's stdout
        assert client.ended
        assert client.server.poll() is None  # the process lives on: its stdout was closed
        assert [answer["id"] for answer in client.answers()] == ["init"]
        half_line = client.output.split(b"\n")[-1]
        assert half_line.startswith(b'{"jsonrpc":"2.0","id":1,') and len(half_line) < BIG_ANSWER
    finally:
        client.end()
