"""stdio framing in one process: a real Client and Server over StreamTransport on os.pipe() pairs.

The fast tier's cover of the stdio transport (tests/protocol/test_stdio.py starts subprocesses,
the slow tier).  2025-11-25 basic/transports §stdio, and 2026-07-28 basic/transports/stdio the
same: "Messages are delimited by newlines, and MUST NOT contain embedded newlines."  So a message
may reach the reader in several pieces, several messages in one piece, and a blank line carries no
message at all (the spec names none: it is skipped, never answered).
"""

from __future__ import annotations

import json
import os
import queue
import struct
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import DEMO_IN_PROCESS, WAIT

from mcp_ref import Client, Server
from mcp_ref.errors import INVALID_REQUEST, ConnectionClosed
from mcp_ref.stdio import DEFAULT_MAX_MESSAGE_SIZE, StreamTransport

pytestmark = pytest.mark.skipif(os.name != "posix", reason="FIONREAD on a pipe is POSIX")

SMALL_LIMIT = 256  # bytes: the server's max_message_size in the test of the bound


class PipeServer:
    """A Server served on a StreamTransport over two ``os.pipe()``s, in this process.

    ``to_server`` / ``from_server`` are the test's (or a Client's) ends: the server reads what is
    written to ``to_server`` and writes its messages to ``from_server``.
    """

    def __init__(self, server: Server, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE):
        self.server_reads, to_server_fd = os.pipe()
        from_server_fd, server_writes = os.pipe()
        self.to_server_fd = to_server_fd
        self.to_server = open(to_server_fd, "wb")
        self.from_server = open(from_server_fd, "rb")
        self.transport = StreamTransport(
            open(self.server_reads, "rb"),
            open(server_writes, "wb"),
            max_message_size=max_message_size,
        )
        self.connection = server.connect(self.transport, peer="stdio")
        self._lines: queue.Queue[bytes] | None = None

    def client(self, **options) -> Client:
        """A real Client on the test's ends of the pipes."""
        return Client(StreamTransport(self.from_server, self.to_server), timeout=WAIT, **options)

    # -- raw bytes, for the framing tests ------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Exactly ``data``, in one write(2) on the pipe."""
        assert os.write(self.to_server_fd, data) == len(data)

    def drained(self) -> None:
        """Wait (bounded) until the server's reader has taken every byte written so far.

        A pipe offers no event for this: its unread byte count (FIONREAD) is polled.
        """
        import fcntl  # POSIX only, like this module's tests
        import termios

        pause = threading.Event()
        for _ in range(int(WAIT / 0.005)):
            unread = fcntl.ioctl(self.server_reads, termios.FIONREAD, struct.pack("i", 0))
            if struct.unpack("i", unread)[0] == 0:
                return
            pause.wait(0.005)
        raise AssertionError("the server did not read what was written")

    def recv(self) -> dict:
        """The server's next message (each one a line), waiting at most WAIT seconds."""
        if self._lines is None:
            self._lines = queue.Queue()
            threading.Thread(target=self._pump, args=(self._lines,), daemon=True).start()
        line = self._lines.get(timeout=WAIT)
        assert line.endswith(b"\n"), line
        return json.loads(line)

    def _pump(self, lines: queue.Queue[bytes]) -> None:
        for line in iter(self.from_server.readline, b""):
            lines.put(line)

    def close(self) -> None:
        """End the server's input, wait for the connection to end, and close every pipe end."""
        for stream in (self.to_server, self.transport.writer):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        assert self.connection.session.wait_closed(WAIT)
        self.transport.reader.close()


@pytest.fixture
def pipe_server():
    """Factory of PipeServers (default: the demo server); all are closed after the test."""
    made: list[PipeServer] = []

    def factory(server: Server | None = None, **options) -> PipeServer:
        made.append(PipeServer(server or DEMO_IN_PROCESS.build(), **options))
        return made[-1]

    yield factory
    for peer in made:
        peer.close()
        peer.from_server.close()


def _ping(request_id) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()


# -- a real Client and Server --------------------------------------------------------------------


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_tools_call_over_stdio_framing_in_each_era(pipe_server, era):
    client = pipe_server().client(era=era)
    try:
        assert client.era == era
        # Two lines of text: the newline inside travels escaped, the message stays one line.
        assert client.call_tool("echo", {"text": "one\ntwo"}).text == "one\ntwo"
    finally:
        client.close()


def test_end_of_input_fails_the_pending_requests(pipe_server):
    started, release = threading.Event(), threading.Event()
    server = Server("blocking")

    @server.tool()
    def wait_for_release() -> str:
        """Block until the test lets go."""
        started.set()
        release.wait(WAIT)
        return "released"

    peer = pipe_server(server)
    client = peer.client(era="handshake")
    try:
        with ThreadPoolExecutor(1) as pool:
            call = pool.submit(client.call_tool, "wait_for_release", {})
            assert started.wait(WAIT)
            peer.transport.close()  # the server's output ends: the client reads end of input
            with pytest.raises(ConnectionClosed):
                call.result(timeout=WAIT)
    finally:
        release.set()
        client.close()


# -- raw bytes on the server's input ----------------------------------------------------------------


def test_a_message_split_across_writes_is_read_whole(pipe_server):
    peer = pipe_server()
    message = _ping("split") + b"\n"
    peer.write(message[:10])
    peer.drained()  # the server has read the first piece before the rest exists
    peer.write(message[10:])
    assert peer.recv() == {"jsonrpc": "2.0", "id": "split", "result": {}}


def test_two_messages_in_one_write_are_both_answered(pipe_server):
    peer = pipe_server()
    peer.write(_ping(1) + b"\n" + _ping(2) + b"\n")
    answers = [peer.recv(), peer.recv()]
    assert sorted(answer["id"] for answer in answers) == [1, 2]
    assert all(answer["result"] == {} for answer in answers)


def test_a_blank_line_is_skipped_without_an_answer(pipe_server):
    peer = pipe_server()
    peer.write(b"\n   \r\n\n" + _ping("after") + b"\n")
    # Nothing answers the blank lines: the first message out is the ping's answer.
    assert peer.recv() == {"jsonrpc": "2.0", "id": "after", "result": {}}


def test_a_line_over_the_bound_is_refused_and_the_connection_kept(pipe_server):
    peer = pipe_server(max_message_size=SMALL_LIMIT)
    padded = {"jsonrpc": "2.0", "id": "big", "method": "ping", "params": {"pad": "x" * 1000}}
    peer.write(json.dumps(padded).encode() + b"\n")
    refusal = peer.recv()
    assert refusal["error"]["code"] == INVALID_REQUEST
    assert str(SMALL_LIMIT) in refusal["error"]["message"]
    # The rest of the long line was discarded, not read as messages; the next line is answered.
    peer.write(_ping("next") + b"\n")
    assert peer.recv() == {"jsonrpc": "2.0", "id": "next", "result": {}}
