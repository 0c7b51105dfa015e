"""Issue 7, classes 3 and 4: the standard-library HTTP server under slow, idle and flooding clients,
and the streams of POSTs whose clients have gone.  Real sockets on 127.0.0.1; every wait is bounded.

The server's limits (``ConnectionLimits``) are made small here so that the tests are quick; the
defaults are in ``spec_notes/security.md``.
"""

from __future__ import annotations

import json
import logging
import queue
import select
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests
from conftest import SERVERS, WAIT, watch_lock, watch_stderr
from http_fixtures import (  # noqa: F401 - fixtures
    ACCEPT_BOTH,
    SseReader,
    init_params,
    raw_session,
    request,
    serve,
)
from test_hardening_streams import Raw

from mcp_ref import Client, ConnectionLimits, Context, Server
from mcp_ref.http.connection_limits import MAX_LINGERING

PING = json.dumps(request("ping", None, 1)).encode()
INITIALIZE = json.dumps(request("initialize", init_params(), 1)).encode()


def head(path: str = "/mcp", length: int = len(PING), extra: bytes = b"") -> bytes:
    return (
        (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: {ACCEPT_BOTH}\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {length}\r\n"
        ).encode()
        + extra
        + b"\r\n"
    )


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=WAIT)


def closed_by_server(sock: socket.socket, timeout: float = WAIT) -> bool:
    """Wait (bounded) until the server ends ``sock``: its end of input, or a reset."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], deadline - time.monotonic())
        if readable:
            try:
                if not sock.recv(65536):
                    return True
            except OSError:
                return True
    return False


def status_of(sock: socket.socket) -> bytes:
    return sock.makefile("rb").readline()


def connection_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "process_request_thread" in t.name]


class LogEvent(logging.Handler):
    """An Event set when a record of ``logger`` holds ``text``."""

    def __init__(self, logger: str, text: str):
        super().__init__(logging.DEBUG)
        self.text = text
        self.event = threading.Event()
        self.logger = logging.getLogger(logger)

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()

    def __enter__(self) -> threading.Event:
        self.level = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)
        return self.event

    def __exit__(self, *exc) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level)


def test_run_http_takes_the_limits():
    from mcp_ref.workbench.demo import build_server

    limits = ConnectionLimits(max_connections=40, header_timeout=2.0)
    httpd = build_server().http_server("127.0.0.1", 0, connection_limits=limits, stateless=True)
    try:
        assert httpd.limits is limits and httpd.connections.cap == 40 and httpd.app.stateless
        assert ConnectionLimits().max_connections == 512 and httpd.watchdog.tick == 0.4
    finally:
        httpd.server_close()


# -- class 3: deadlines --------------------------------------------------------------------------


def test_a_head_trickled_a_byte_at_a_time_ends_at_the_header_deadline(serve):
    """A deadline for the whole head, not for each read: a byte every 0.1 s never beats it."""
    srv = serve(stateless=True, limits=ConnectionLimits(header_timeout=0.6))
    started = time.monotonic()  # before the accepts, from which the deadline counts
    socks = [connect(srv.port) for _ in range(8)]
    sent = dict.fromkeys(socks, 0)
    ended: dict[socket.socket, float] = {}
    watchdog = LogEvent("mcp_ref.http.connection_limits", "past its deadline")
    with watchdog as deadline:
        # Each byte is a read the server completes; 100 rounds of them take over 10 s (WAIT).
        while len(ended) < len(socks) and max(sent.values()) < 100:
            for sock in socks:  # the adversary's pace: one byte each, every 0.1 s
                if sock not in ended:
                    try:
                        sock.send(b"X")
                        sent[sock] += 1
                    except OSError:
                        ended[sock] = time.monotonic() - started
            readable, _, _ = select.select([s for s in socks if s not in ended], [], [], 0.1)
            for sock in readable:
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    ended[sock] = time.monotonic() - started
    assert len(ended) == len(socks) and deadline.is_set(), sent  # ended by the watchdog's deadline
    # Not before it: a lower bound, which load only makes easier to meet.
    assert all(seconds >= 0.6 for seconds in ended.values()), ended
    with connect(srv.port) as sock:  # the server goes on
        sock.sendall(head() + PING)
        assert status_of(sock).split()[1] == b"200"


def test_a_body_trickled_slowly_ends_at_the_body_deadline(serve):
    """A deadline for the whole body, not for each read: a byte every 0.1 s never beats it."""
    # The other deadlines are far past anything this test waits: only the body's can end it.
    srv = serve(stateless=True, limits=ConnectionLimits(body_timeout=0.5, header_timeout=60))
    watchdog = LogEvent("mcp_ref.http.connection_limits", "past its deadline")
    with connect(srv.port) as sock, watchdog as deadline:
        sock.sendall(head(length=1000))
        sent = 0
        while sent < 100:  # each byte a read the server completes; 100 of them take over 10 s
            try:
                sock.send(b" ")
            except OSError:
                break
            sent += 1
            if select.select([sock], [], [], 0.1)[0]:
                break
        assert closed_by_server(sock)
        assert deadline.is_set()  # the watchdog ended it at a deadline, with the body unfinished
        assert sent < 100


def test_idle_connections_end_and_a_kept_alive_one_waits_its_own_limit(serve):
    srv = serve(stateless=True, limits=ConnectionLimits(header_timeout=0.4, keepalive_timeout=2.0))
    with connect(srv.port) as kept:
        asked = time.monotonic()  # before the request: the keep-alive limit counts from its answer
        kept.sendall(head() + PING)
        reader = kept.makefile("rb")
        assert reader.readline().split()[1] == b"200"
        # Accepted after that answer: were its limit the keep-alive one, it would end after `kept`.
        with connect(srv.port) as idle:
            assert closed_by_server(idle)  # never sent a byte: the header deadline, from the accept
            assert not select.select([kept], [], [], 0)[0]  # ... first: `kept` is still open
        assert closed_by_server(kept)  # kept alive after its answer: the keep-alive limit
        assert time.monotonic() - asked >= 2.0  # a lower bound: load only makes it longer


# -- class 3: the cap -------------------------------------------------------------------------------


def test_floods_of_idle_and_trickling_connections_never_lock_out_a_client(serve):
    cap = 20
    srv = serve(
        limits=ConnectionLimits(max_connections=cap, header_timeout=60, keepalive_timeout=60)
    )
    before = len(connection_threads())
    flood = []
    for n in range(300):
        sock = connect(srv.port)
        if n % 2:
            sock.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            )  # a head begun, never finished
        flood.append(sock)
    assert len(connection_threads()) - before <= cap + MAX_LINGERING  # not a thread a socket
    with Client.http(srv.mcp, timeout=WAIT) as client:  # the longest waiters make room for it
        assert client.call_tool("echo", {"text": "in"}).content[0].text == "in"
    closed = sum(closed_by_server(sock, timeout=WAIT / 4) for sock in flood[:250])
    assert closed == 250  # the oldest were closed to make room; at most `cap` held at once
    for sock in flood:
        sock.close()


def test_when_every_connection_is_at_work_a_newcomer_gets_a_503_it_can_read(serve):
    srv = serve(
        keepalive=0.1, limits=ConnectionLimits(max_connections=3, evict_streams=False)
    )  # streams as work
    streams = [requests.get(srv.sse, stream=True, timeout=(WAIT, WAIT)) for _ in range(3)]
    readers = [SseReader(response) for response in streams]
    assert all(reader.next()["event"] == "endpoint" for reader in readers)  # all three at work
    for _ in range(20):  # each one refused, and each refusal read whole (never a reset)
        response = requests.post(
            srv.mcp,
            data=json.dumps(request("initialize", init_params())),
            headers={"Accept": ACCEPT_BOTH, "Content-Type": "application/json"},
            timeout=(WAIT, WAIT),
        )
        assert response.status_code == 503 and response.headers["Retry-After"] == "1"
        assert response.json()["error"]["message"].startswith("Server busy")
    with connect(
        srv.port
    ) as sock:  # still sending when refused: what it sends is read and dropped,
        sock.sendall(
            head(length=8_000_000) + b" " * 8_000_000
        )  # so its send completes (no broken pipe)
        assert status_of(sock).split()[1] == b"503"
    released = threading.Event()
    release = srv.httpd.connections.release
    srv.httpd.connections.release = lambda sock: (release(sock), released.set())
    readers[0].close()  # one stream ends (the server learns it at its next keep-alive line)
    assert released.wait(WAIT)
    response = requests.post(
        srv.mcp,
        data=json.dumps(request("initialize", init_params())),
        headers={"Accept": ACCEPT_BOTH, "Content-Type": "application/json"},
        timeout=(WAIT, WAIT),
    )
    assert response.status_code == 200  # room again
    for reader in readers[1:]:
        reader.close()


def test_a_quiet_sse_stream_outlives_every_timeout(serve):
    srv = serve(
        keepalive=60,
        limits=ConnectionLimits(header_timeout=0.3, keepalive_timeout=0.3, body_timeout=0.3),
    )
    stream = SseReader(requests.get(srv.sse, stream=True, timeout=(WAIT, WAIT)))
    endpoint = stream.next()["data"]
    with connect(srv.port) as idle:  # opened after the stream: when the server ends it, the
        assert closed_by_server(idle)  # stream has been quiet for longer than every timeout
    posted = requests.post(
        srv.url + endpoint,
        data=json.dumps(request("initialize", init_params("2024-11-05"), 7)),
        headers={"Content-Type": "application/json"},
        timeout=(WAIT, WAIT),
    )
    assert posted.status_code == 202
    answer = json.loads(stream.next()["data"])  # the stream still carries the answer
    assert answer["id"] == 7 and answer["result"]["protocolVersion"] == "2024-11-05"
    stream.close()


# -- class 3: a body left unread by an error answer ---------------------------------------------------

SLOTS = 8
SHARE = 2  # max_requests_per_client's default: a quarter of the slots
TRICKLED = 100_000  # declared; only its first byte is ever sent


def from_another_client(port: int) -> socket.socket:
    """A connection from 127.0.0.2: another address, another client."""
    return socket.create_connection(
        ("127.0.0.1", port), timeout=WAIT, source_address=("127.0.0.2", 0)
    )


@pytest.mark.parametrize(
    "path, status, code", [("/mcp", 429, -31005), ("/nowhere", 404, -32600)], ids=["429", "404"]
)
def test_error_answers_to_trickled_bodies_close_so_one_client_cannot_take_every_slot(
    serve, path, status, code
):
    """An answer that leaves the body unread (429 past the client's share, 404) never waits for the
    rest of a body being trickled: it says ``Connection: close`` and the connection ends at once,
    its slot free (RFC 9112 §9.5, §9.6).  Before, each one drained the body for up to the body
    deadline, counted as working, never evicted: 2 * SLOTS of them left another client a 503."""
    srv = serve(
        stateless=True,
        limits=ConnectionLimits(
            max_connections=SLOTS, header_timeout=60, keepalive_timeout=60, body_timeout=60
        ),
    )
    in_flight = watch_lock(srv.app._requests)  # the counts are kept under these locks
    admitted = watch_lock(srv.httpd.connections, "lock")
    trickle = head(path, length=TRICKLED) + b"{"
    held = []
    if path == "/mcp":  # the client's share taken by POSTs whose bodies the app waits for
        for _ in range(SHARE):
            sock = connect(srv.port)
            sock.sendall(head(length=TRICKLED) + b"{")
            held.append(sock)
        assert in_flight(lambda: srv.app.requests_in_flight() == SHARE)
    refused = []
    for _ in range(2 * SLOTS):  # more than every slot of the server, each one answered
        sock = connect(srv.port)
        sock.sendall(trickle)
        answer = Raw(sock)
        assert answer.status == status and answer.headers.get("connection") == "close"
        assert json.loads(answer.body())["error"]["code"] == code
        assert closed_by_server(sock)  # ended by the server, its body never awaited
        refused.append(sock)  # kept open on this side: only the server's close frees the slot
    assert admitted(lambda: srv.httpd.connections.count == len(held))
    with from_another_client(srv.port) as sock:  # another client is served, not refused with 503
        sock.sendall(head(length=len(INITIALIZE)) + INITIALIZE)
        answer = Raw(sock)
        assert answer.status == 200
        assert json.loads(answer.body())["result"]["protocolVersion"] == "2025-11-25"
    for sock in held + refused:
        sock.close()


def test_a_client_still_sending_the_body_of_a_refused_request_reads_its_answer(serve):
    """The connection closes lingering (``Lingerer.linger``): what the client still sends is read
    and dropped, so its send completes and it reads the 404, rather than a reset destroying it."""
    srv = serve(stateless=True)
    size = 16 * 1024 * 1024  # past DRAIN_LIMIT and every socket buffer: sent while answered
    with connect(srv.port) as sock:
        sock.sendall(head("/nowhere", length=size) + b" " * size)  # all of it, then read
        answer = Raw(sock)
        assert answer.status == 404 and answer.headers.get("connection") == "close"
        assert closed_by_server(sock)


def test_an_error_answer_to_a_body_that_has_arrived_keeps_the_connection(serve):
    """A body sent whole with its head is dropped without waiting: the connection stays open."""
    srv = serve(stateless=True)
    with connect(srv.port) as sock:
        sock.sendall(head("/nowhere") + PING)
        answer = Raw(sock)
        assert answer.status == 404 and "connection" not in answer.headers
        answer.body()
        sock.sendall(head() + PING)  # the same connection serves the next request
        assert Raw(sock).status == 200


def flooding_server(**events) -> Server:
    """A tool that sends ``count`` progress notifications of ``size`` bytes each, stopping when cancelled."""
    server = Server("flooding")

    @server.tool()
    def chatter(count: int, ctx: Context, size: int = 100) -> str:
        """Progress, a lot of it."""
        text = "x" * size
        for n in range(count):
            if n == 1 and "go" in events:  # the first event is out: wait until the test says go
                events["go"].wait(WAIT)
            if ctx.is_cancelled:
                events["cancelled"].set()
                return "cancelled"
            ctx.report_progress(n + 1, count, text)
        events["finished"].set()
        return "done"

    return server


def chatter_call(count: int, size: int = 100, request_id: int = 2) -> dict:
    return request(
        "tools/call",
        {
            "name": "chatter",
            "arguments": {"count": count, "size": size},
            "_meta": {"progressToken": "p"},
        },
        request_id,
    )


def test_a_client_that_stops_reading_is_cut_at_the_write_timeout(serve, raw_session):
    finished = threading.Event()
    srv = serve(
        flooding_server(finished=finished, cancelled=threading.Event()),
        stateless=True,
        limits=ConnectionLimits(write_timeout=0.5),
    )
    body = json.dumps(
        chatter_call(400, size=64 * 1024)
    ).encode()  # 25 MB of events, more than socket buffers hold
    with LogEvent("mcp_ref.http.wsgi_server", "timed out") as timed_out, connect(srv.port) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.sendall(head(length=len(body)) + body)  # and never read
        assert timed_out.wait(WAIT)  # the write that blocked for 0.5 s ended the connection
        received = 0
        while True:
            data = sock.recv(1 << 20)
            if not data:
                break
            received += len(data)
        assert received < 400 * 64 * 1024  # cut, not delivered
    with Client.http(srv.mcp, timeout=WAIT) as client:
        assert client.call_tool("chatter", {"count": 1}).content[0].text == "done"


# -- class 4: the stream of a POST whose client has gone --------------------------------------------


@pytest.mark.slow
def test_a_dropped_post_stream_keeps_a_bounded_backlog_and_its_answer_for_a_resuming_get(
    serve, raw_session, caplog
):
    from mcp_ref.http.server import MemoryEventStore

    finished, go = threading.Event(), threading.Event()
    srv = serve(
        flooding_server(finished=finished, cancelled=threading.Event(), go=go),
        stream_backlog=50,
        event_store=MemoryEventStore(max_events=100_000),
    )  # the store must not be what bounds it
    session = raw_session(srv.mcp)
    session.initialize()
    response = session.post(chatter_call(20_000), stream=True)
    reader = SseReader(response)
    seen = reader.next()["id"]  # the priming event: the stream is resumable from here
    assert json.loads(reader.next()["data"])["params"]["progress"] == 1
    reader.close()  # the client goes, without cancelling ("Disconnection SHOULD NOT be interpreted as ... cancelling")
    with caplog.at_level(logging.WARNING, "mcp_ref.http.server"):
        go.set()
        assert finished.wait(WAIT)  # the handler ran to its end
    assert sum("is full" in r.getMessage() for r in caplog.records) == 1  # one line, not 20,000
    resumed = SseReader(session.get(headers={"Last-Event-ID": seen}))
    messages = [m for _, m in resumed.messages(2)]
    assert (
        messages[-1]["id"] == 2 and messages[-1]["result"]["content"][0]["text"] == "done"
    )  # the answer is never lost
    assert resumed.next() is None  # the response has ended, and with it the stream
    assert list(srv.app.sessions[session.session_id].by_id) == [
        "s"
    ]  # an ended stream is not kept in the session
    # The first event, the few written before the server noticed the drop, the backlog, the answer:
    assert len(messages) <= 1 + 10 + 50 + 1, len(messages)


def test_a_stateless_request_whose_client_has_gone_is_cancelled(serve):
    cancelled = threading.Event()
    srv = serve(flooding_server(finished=threading.Event(), cancelled=cancelled), stateless=True)
    response = requests.post(
        srv.mcp,
        data=json.dumps(chatter_call(10**9)),
        stream=True,
        timeout=(WAIT, WAIT),
        headers={
            "Accept": ACCEPT_BOTH,
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
        },
    )
    reader = SseReader(response)
    assert json.loads(reader.next()["data"])["method"] == "notifications/progress"
    reader.close()  # nothing can resume a stateless stream: no one can receive the answer
    assert cancelled.wait(WAIT)
    with Client.http(srv.mcp, timeout=WAIT) as client:
        assert client.call_tool("chatter", {"count": 3}).content[0].text == "done"


# -- class 3: file descriptors ------------------------------------------------------------------------


def start_fd_server(limit: int, *args: str):
    import resource

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    proc = subprocess.Popen(
        [sys.executable, str(SERVERS / "fd_starved_http.py"), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=low_limit,
    )
    lines: queue.Queue = queue.Queue()
    seen: list[str] = []

    def pump(stream, tag):
        for line in stream:
            seen.append(line)
            lines.put((tag, line.strip()))

    for stream, tag in ((proc.stdout, "out"), (proc.stderr, "err")):
        threading.Thread(target=pump, args=(stream, tag), daemon=True).start()
    watch_stderr("fd_starved_http", lambda: seen)
    return proc, lines


def next_line(lines: queue.Queue, tag: str, starts: str) -> str:
    deadline = time.monotonic() + WAIT
    while True:
        kind, line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        if kind == tag and starts in line:
            return line


@pytest.mark.slow
def test_the_cap_is_fitted_to_the_open_file_limit():
    from mcp_ref.http.connection_limits import FD_RESERVE

    proc, lines = start_fd_server(300, "--no-starve")
    try:
        assert next_line(lines, "out", "cap") == f"cap {300 - FD_RESERVE}"
    finally:
        proc.kill()
        proc.wait(WAIT)


def cpu_seconds(pid: int) -> float:
    import os

    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_out_of_file_descriptors_the_accept_loop_pauses_and_serves_when_they_return():
    proc, lines = start_fd_server(256)
    try:
        url = next_line(lines, "out", "ready").split()[1]
        port = int(url.rpartition(":")[2])
        with connect(port) as sock:  # completed by the kernel, waiting in the backlog
            sock.sendall(head() + PING)
            next_line(lines, "err", "cannot accept a connection")
            spent, began = cpu_seconds(proc.pid), time.monotonic()
            for _ in range(
                3
            ):  # pauses of 0.02, 0.04 ... 0.32, then 0.5 s each: eight tries in ~1.6 s
                next_line(lines, "err", "pausing 0.50 s")
            assert time.monotonic() - began > 1.0  # it paused ...
            assert cpu_seconds(proc.pid) - spent < 0.3  # ... rather than spin
            proc.stdin.write("free\n")
            proc.stdin.flush()
            assert status_of(sock).split()[1] == b"200"  # served once descriptors are back
    finally:
        proc.kill()
        proc.wait(WAIT)


def test_ctrl_c_while_a_connection_starts_never_closes_its_socket_under_its_thread(
    monkeypatch, caplog
):
    """The accept loop interrupted (KeyboardInterrupt) just after starting a connection's thread:
    socketserver then "shuts down" the request from the accept loop.  The socket must not be
    closed under the running thread (its next write would fail with EBADF and a traceback); the
    thread ends as with a lost client and closes the socket itself."""
    import socketserver

    from mcp_ref.http.wsgi_server import WsgiServer

    began, release = threading.Event(), threading.Event()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])

        def body():
            began.set()
            release.wait(WAIT)
            yield b"late"

        return body()

    handlers: list[threading.Thread] = []
    real_process_request = socketserver.ThreadingMixIn.process_request

    def interrupted(self, request, client_address):
        before = set(threading.enumerate())
        real_process_request(self, request, client_address)
        handlers.extend(
            t for t in set(threading.enumerate()) - before if t.name != "mcp-ref-watchdog"
        )
        assert began.wait(WAIT)
        raise KeyboardInterrupt  # as Ctrl-C would, between the thread's start and the loop's next turn

    monkeypatch.setattr(socketserver.ThreadingMixIn, "process_request", interrupted)
    httpd = WsgiServer(("127.0.0.1", 0), app)
    httpd.timeout = WAIT
    try:
        with connect(httpd.port) as sock, caplog.at_level(logging.DEBUG, "mcp_ref"):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            with pytest.raises(KeyboardInterrupt):
                httpd.handle_request()
            assert sock.recv(1024) == b""  # shut down: the client sees the end at once
            release.set()
            for thread in handlers:
                thread.join(WAIT)
                assert not thread.is_alive()
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
        assert "Bad file descriptor" not in caplog.text
        assert httpd.connections.count == 0  # released by its own thread
    finally:
        httpd.server_close()


# -- the request head, parsed by WsgiRequestHandler.parse_request (RFC 9112) ----------------------------


@pytest.mark.parametrize(
    "extra, status",
    [
        (b"X-Folded: one\r\n two\r\n", b"400"),  # obsolete line folding (§5.2)
        (b"X-Space : before the colon\r\n", b"400"),  # whitespace before the colon (§5.1)
        (b"X-Bare: a\rb\r\n", b"400"),  # a bare CR (§2.2)
        (b"Bad Name: x\r\n", b"400"),  # a field name that is not a token
        (b"NoColon\r\n", b"400"),
        (b"Content-Length: 999\r\n", b"400"),  # a second Content-Length that disagrees (§6.3)
        (b"Transfer-Encoding: chunked\r\n", b"411"),  # only Content-Length frames a body here
        (b"".join(b"X-%d: v\r\n" % n for n in range(100)), b"431"),  # too many fields
        (b"X-Long: " + b"v" * 70_000 + b"\r\n", b"431"),  # a field line too long
    ],
    ids=[
        "folding",
        "space-before-colon",
        "bare-cr",
        "bad-name",
        "no-colon",
        "two-lengths",
        "chunked",
        "too-many",
        "too-long",
    ],
)
def test_a_malformed_request_head_is_refused_and_the_server_goes_on(serve, extra, status):
    served = serve()
    with connect(served.httpd.port) as sock:
        sock.sendall(head(extra=extra) + PING)
        assert status_of(sock).split()[1] == status
    assert requests.get(
        served.url + "/.well-known/oauth-protected-resource", timeout=WAIT
    ).status_code in (200, 404)


@pytest.mark.parametrize(
    "line, status",
    [
        (b"POST /mcp HTTP/2.0", b"505"),
        (b"POST /mcp HTTP/1.x", b"400"),
        (b"POST /mcp", b"400"),
        (b"POST  /mcp HTTP/1.1", b"400"),
    ],
)
def test_a_bad_request_line_is_refused(serve, line, status):
    served = serve()
    with connect(served.httpd.port) as sock:
        sock.sendall(line + b"\r\n" + head()[head().index(b"\r\n") + 2 :] + PING)
        assert status_of(sock).split()[1] == status


@pytest.mark.parametrize("ending", [b"\r\n", b"\n"], ids=["crlf-whole-head", "lf-line-by-line"])
@pytest.mark.parametrize(
    "version, hosts",
    [
        (b"HTTP/1.1", []),
        (b"HTTP/1.1", [b"127.0.0.1", b"evil.example"]),
        (b"HTTP/1.1", [b"evil.example", b"127.0.0.1"]),
        (b"HTTP/1.0", [b"127.0.0.1", b"127.0.0.1"]),
    ],
    ids=["none", "two-allowed-first", "two-evil-first", "two-http-1.0"],
)
def test_a_request_without_one_host_field_gets_400(serve, ending, version, hosts):
    """RFC 9112 §3.2: a server "MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
    request message that lacks a Host header field and to any request message that contains more
    than one Host header field line" (it was 403, from the rebinding guard).  Both head parsers;
    the same request with one Host is served."""
    served = serve()
    lines = [b"POST /mcp " + version]
    lines += [b"Host: " + host for host in hosts]
    lines += [
        b"Content-Type: application/json",
        b"Accept: " + ACCEPT_BOTH.encode(),
        b"Content-Length: %d" % len(INITIALIZE),
        b"Connection: close",
    ]
    with connect(served.httpd.port) as sock:
        sock.sendall(ending.join([*lines, b"", b""]) + INITIALIZE)
        assert status_of(sock).split()[1] == b"400"
    good = [b"POST /mcp HTTP/1.1", b"Host: 127.0.0.1", *lines[-4:]]
    with connect(served.httpd.port) as sock:
        sock.sendall(ending.join([*good, b"", b""]) + INITIALIZE)
        assert status_of(sock).split()[1] == b"200"


def test_keep_alive_follows_the_version_and_connection_and_expect_continue_is_answered(serve):
    served = serve()
    port = served.httpd.port
    with connect(port) as sock:  # HTTP/1.0: closed after the answer unless asked to keep it
        sock.sendall(head().replace(b"HTTP/1.1", b"HTTP/1.0") + PING)
        assert status_of(sock).split()[1] in (b"200", b"400")
        assert closed_by_server(sock)
    with connect(port) as sock:  # HTTP/1.1, Connection: close
        sock.sendall(head(extra=b"Connection: close\r\n") + PING)
        assert closed_by_server(sock)
    with connect(
        port
    ) as sock:  # Expect: 100-continue gets its interim answer before the body is sent
        sock.sendall(head(extra=b"Expect: 100-continue\r\n"))
        reader = sock.makefile("rb")
        assert reader.readline().startswith(b"HTTP/1.1 100")
        sock.sendall(PING)
        while reader.readline() not in (b"\r\n", b""):
            pass
        assert reader.readline().split()[:2] in ([b"HTTP/1.1", b"200"], [b"HTTP/1.1", b"400"])


def echo_headers_app(environ, start_response):
    """A WSGI app answering with the values of the X-Pad and X-Spaces headers it was given."""
    body = json.dumps([environ.get("HTTP_X_PAD"), environ.get("HTTP_X_SPACES")]).encode()
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


@pytest.mark.parametrize("ending", [b"\r\n", b"\n"], ids=["crlf-whole-head", "lf-line-by-line"])
def test_header_names_with_underscores_get_no_environ_key(ending):
    """``X_Pad`` and ``X-Pad`` would share ``HTTP_X_PAD``: the name with ``_`` is dropped there
    (as gunicorn, Werkzeug and nginx do), so it is never taken for the other, alone or beside it;
    ``environ["mcp_ref.headers"]`` keeps it under its own name.  Both head parsers."""
    from mcp_ref.http.wsgi_server import WsgiServer

    seen = []

    def app(environ, start_response):
        seen.append(environ)
        return echo_headers_app(environ, start_response)

    httpd = WsgiServer(("127.0.0.1", 0), app)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        for fields, pad in (([b"X_Pad: evil"], None), ([b"X-Pad: good", b"X_Pad: evil"], "good")):
            with connect(httpd.port) as sock:
                lines = [b"GET / HTTP/1.1", b"Host: 127.0.0.1", *fields, b"Connection: close"]
                sock.sendall(ending.join([*lines, b"", b""]))
                reader = sock.makefile("rb")
                assert reader.readline().split()[1] == b"200"
                while reader.readline() not in (b"\r\n", b""):
                    pass
                assert json.loads(reader.read()) == [pad, None]
        assert seen[-1]["mcp_ref.headers"].get_all("x_pad") == ["evil"]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)


@pytest.mark.parametrize("ending", [b"\r\n", b"\n"], ids=["crlf-whole-head", "lf-line-by-line"])
def test_field_values_are_trimmed_in_time_linear_in_their_length(ending):
    """RFC 9112 §5: a field value's surrounding spaces and tabs are not part of it.  Trimming
    costs time linear in the line: a 60,000-space run inside a value is answered well within the
    wait (a pattern that trims lazily took tens of seconds here).  CRLF heads are parsed whole,
    LF-only ones line by line: both paths."""
    from mcp_ref.http.wsgi_server import WsgiServer

    httpd = WsgiServer(("127.0.0.1", 0), echo_headers_app)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    spaces = b"a" + b" " * 60_000 + b"b"
    try:
        with connect(httpd.port) as sock:
            lines = [
                b"GET / HTTP/1.1",
                b"Host: 127.0.0.1",
                b"X-Pad: \t a b \t ",
                b"X-Spaces: " + spaces + b"  ",
                b"Connection: close",
                b"",
                b"",
            ]
            sock.sendall(ending.join(lines))
            reader = sock.makefile("rb")
            assert reader.readline().split()[1] == b"200"
            while reader.readline() not in (b"\r\n", b""):
                pass
            assert json.loads(reader.read()) == ["a b", spaces.decode()]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)


def answered_bytes(app, requests: bytes) -> bytes:
    """Every byte the standard-library server, serving ``app``, sends back on one connection
    given ``requests`` (written at once; the last asks to close): read until it closes."""
    from mcp_ref.http.wsgi_server import WsgiServer

    httpd = WsgiServer(("127.0.0.1", 0), app)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        with connect(httpd.port) as sock:
            sock.sendall(requests)
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
        return received
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)


def sized_or_streamed_app(environ, start_response):
    """A WSGI app: ``/sized`` answers a body it gives whole (a list), anything else one it streams
    (a generator, of unknown length: chunked)."""
    if environ["PATH_INFO"] == "/sized":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"hello, ", b"world"]

    def stream():
        start_response("200 OK", [("Content-Type", "text/plain")])
        yield b"streamed"

    return stream()


def test_a_head_request_is_answered_without_content_and_the_connection_goes_on():
    """RFC 9110 §9.3.2: the server "MUST NOT send content in the response" to HEAD.  Its head
    (Content-Length as a GET would have it, or chunked framing) and nothing else: the next
    request's answer on the same kept-alive connection starts right after it.  Exact bytes."""
    received = answered_bytes(
        sized_or_streamed_app,
        b"HEAD /sized HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        b"HEAD /streamed HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        b"GET /sized HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    assert received == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n"
        b"Connection: close\r\n\r\nhello, world"
    )


def no_content_app(environ, start_response):
    """A WSGI app answering 204 (streamed, or given whole with a Content-Length of its own) or 304
    (streamed, with a GET's Content-Length), each with a body the server must not send; ``/sized``
    as :func:`sized_or_streamed_app`."""
    path = environ["PATH_INFO"]
    if path == "/sized":
        return sized_or_streamed_app(environ, start_response)
    if path == "/whole-204":
        start_response("204 No Content", [("Content-Length", "0")])
        return [b""]

    def stream():
        if path == "/unchanged":
            start_response("304 Not Modified", [("ETag", '"1"'), ("Content-Length", "12")])
        else:
            start_response("204 No Content", [("X-Done", "yes")])
        yield b""
        yield b"not for the wire"

    return stream()


def test_a_204_or_304_has_no_content_no_framing_and_the_connection_goes_on():
    """RFC 9110 §15.3.5: a 204 "cannot contain content"; RFC 9112 §6.1 and RFC 9110 §8.6: a server
    MUST NOT send Transfer-Encoding or Content-Length in a 204; RFC 9112 §6.3: a 204 or 304 ends
    with its head.  So no chunked framing, no terminator, no bytes the application yields: the
    next answer on the same kept-alive connection starts right after the head.  Exact bytes."""
    received = answered_bytes(
        no_content_app,
        b"GET /streamed-204 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        b"GET /whole-204 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        b"GET /unchanged HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        b"GET /sized HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    assert received == (
        b"HTTP/1.1 204 No Content\r\nX-Done: yes\r\n\r\n"
        b"HTTP/1.1 204 No Content\r\n\r\n"
        b'HTTP/1.1 304 Not Modified\r\nETag: "1"\r\nContent-Length: 12\r\n\r\n'
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n"
        b"Connection: close\r\n\r\nhello, world"
    )


def test_a_head_request_to_the_mcp_endpoint_gets_its_error_answer_without_content(serve):
    """The MCP application's answer to HEAD (an error) leaves no body on the connection: the next
    request on it is answered in turn (a HEAD's body would be read as the next status line)."""
    served = serve()
    with connect(served.httpd.port) as sock:
        sock.sendall(
            b"HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            b"GET /nothing-here HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    first_head, _, rest = received.partition(b"\r\n\r\n")
    assert first_head.startswith(b"HTTP/1.1 4")
    assert rest.startswith(b"HTTP/1.1 404 "), rest[:80]
