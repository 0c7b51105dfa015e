"""A site that mounts the app keeps answering (issue 32 item 4), under real gunicorn (gthread).

- Quiet streams: each open stream holds one of the worker's threads.  One client that opened as
  many as the worker has (``--threads 8``) left the Django or Flask site's own page unanswered,
  and, once it dropped them, the site waited for the streams' next keep-alive writes to notice.
  Now an app keeps its streams to half the threads gunicorn's hooks report (503 past that), and
  notices a dropped stream from its socket at once.
- Oversize bodies: the Flask recipe read the whole body before the app's ``max_body_size``
  applied (a 96 MB POST grew the worker by 99 MB before its 413).  Every recipe (Flask, Django,
  the ASGI one, plain WSGI) now leaves the body to the app, which checks its size first: a
  client that sends the headers and only part of a body too large gets its 413 all the same.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

import pytest
import requests
from conftest import SERVERS, WAIT, command_label, watch_stderr
from http_fixtures import (
    ACCEPT_BOTH,
    TIMEOUT,
    free_port,
    serve,  # noqa: F401 - fixture
)
from test_http_deploy import LineReader, stop, wait_for_port
from test_web_app import gunicorn_site

from mcp_ref import Client, McpError
from mcp_ref.http.server import peers
from mcp_ref.http.server.worker_threads import share_of
from mcp_ref.workbench.demo import build_server

HOOKS = ("-c", "python:mcp_ref.http.gunicorn_hooks")
#: gunicorn_site's --threads, and the streams an app may hold under it.
THREADS = 8
SHARE = share_of(THREADS)
#: The app's default max_body_size, and the Content-Length of the oversize POST.
MAX_BODY = 4 * 1024 * 1024
OVERSIZE = 96 * 1024 * 1024


@pytest.fixture(scope="module", params=["flask", "django"])
def site(request):
    """The Flask or the Django recipe under gunicorn with mcp_ref's hooks: (URL, stderr lines)."""
    app = {"flask": "flask_app:app", "django": "django_app.wsgi:application"}[request.param]
    yield from gunicorn_site(request.param, app, HOOKS)


@pytest.fixture(scope="module")
def wsgi_site():
    """The plain WSGI app (the demo server) under gunicorn, mounted at the root."""
    yield from gunicorn_site("gunicorn", "sync_worker_app:app", HOOKS)


@pytest.fixture(scope="module")
def asgi_site():
    """The ASGI recipe (tests/servers/asgi_mount.py) under uvicorn, through a2wsgi."""
    if any(importlib.util.find_spec(m) is None for m in ("a2wsgi", "uvicorn", "starlette")):
        pytest.skip("the ASGI recipe needs a2wsgi, uvicorn and starlette (in the test extra)")
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "asgi_mount:app",
        "--app-dir",
        str(SERVERS),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    errors = LineReader(proc.stderr)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}", errors
    finally:
        stop(proc)


class RawStream:
    """A GET on a socket of its own: its status, headers and (a refusal's) JSON body."""

    def __init__(self, url: str, path: str):
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=WAIT)
        self.sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        self.reader = self.sock.makefile("rb")
        self.status = int(self.reader.readline().split()[1])
        self.headers: dict[str, str] = {}
        for line in iter(self.reader.readline, b"\r\n"):
            name, _, value = line.decode().partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def first_line(self) -> bytes:
        """The first line of an SSE body (chunked: a size line, then the event)."""
        line = self.reader.readline()
        if self.headers.get("transfer-encoding") == "chunked":
            line = self.reader.readline()
        return line

    def json(self) -> dict:
        return json.loads(self.reader.read(int(self.headers["content-length"])))

    def drop(self) -> None:
        """The client goes: its connection closed, nothing more said."""
        self.reader.close()
        self.sock.close()


def open_streams(url: str, path: str, count: int) -> list[RawStream]:
    """``count`` 2024-11-05 session streams, each checked live (its endpoint event came)."""
    streams = []
    for _ in range(count):
        stream = RawStream(url, path)
        streams.append(stream)
        assert stream.status == 200, (stream.status, stream.headers)
        assert stream.first_line().startswith(b"event: endpoint")
    return streams


def open_when_room(url: str, path: str) -> RawStream:
    """A stream, retried on 503 (each ``Retry-After`` shortened to a tenth of a second) until
    WAIT, which is shorter than the app's keep-alive (15 s): room comes only from a dropped
    stream noticed before its next write."""
    deadline = time.monotonic() + WAIT
    pause = threading.Event()
    while True:
        stream = RawStream(url, path)
        if stream.status == 200 or time.monotonic() > deadline:
            return stream
        stream.drop()
        pause.wait(0.1)


@pytest.mark.slow
def test_a_mounted_app_keeps_its_streams_to_half_the_threads_and_the_site_answers(site):
    url, errors = site
    watch_stderr("gunicorn site", lambda: list(errors.all))
    held = open_streams(url, "/tools/sse", SHARE)
    refused = [RawStream(url, "/tools/sse") for _ in range(THREADS - SHARE)]  # as many as threads
    try:
        for stream in refused:
            assert stream.status == 503 and stream.headers["retry-after"] == "5", stream.headers
            error = stream.json()["error"]
            assert error["code"] == -31005 and error["data"] == {"limit": SHARE}, error
            assert f"half of this worker's {THREADS} threads" in error["message"]
        # the rest of the site, and the app's own calls, still have threads
        assert requests.get(url + "/", timeout=TIMEOUT).text.startswith("hello")
        answer = requests.post(
            url + "/tools/mcp",
            timeout=TIMEOUT,
            headers={"Accept": ACCEPT_BOTH},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert answer.status_code in (200, 400), answer.text  # served (a ping without a session)
    finally:
        for stream in held + refused:
            stream.drop()
    # Dropped: noticed from their sockets at once, not at their keep-alive 15 s from now.
    back = [open_when_room(url, "/tools/sse") for _ in range(SHARE)]
    try:
        assert [stream.status for stream in back] == [200] * SHARE
        assert requests.get(url + "/", timeout=TIMEOUT).text.startswith("hello")
    finally:
        for stream in back:
            stream.drop()
    assert "Traceback" not in "".join(errors.all)


# -- an oversize body ---------------------------------------------------------------------------


def post_too_much(url: str, path: str, *, chunked: bool) -> int:
    """POST a body over MAX_BODY, but send only part of it (Content-Length: OVERSIZE, 64 KiB
    sent; or chunked: MAX_BODY + 64 KiB sent, never its last chunk), then wait for the status."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=WAIT) as sock:
        framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {OVERSIZE}"
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: {ACCEPT_BOTH}\r\n{framing}\r\n\r\n".encode()
        )
        piece = b"[" + b" " * (64 * 1024 - 1)
        try:
            for _ in range((MAX_BODY // len(piece) + 1) if chunked else 1):
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                piece = b" " * len(piece)
        except OSError:  # the server answered and stopped reading: its answer is there to read
            pass
        return int(sock.makefile("rb").readline().split()[1])


@pytest.mark.slow
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_every_recipe_refuses_an_oversize_body_before_reading_it(
    site, wsgi_site, asgi_site, chunked
):
    """Never read whole: the client stops sending, and gets its 413 (with Content-Length: at
    once; chunked: after MAX_BODY + 1 bytes).  Then the site serves the next request."""
    for (url, errors), path in [(site, "/tools/mcp"), (wsgi_site, "/mcp"), (asgi_site, "/mcp")]:
        watch_stderr(command_label(["site", url]), lambda errors=errors: list(errors.all))
        assert post_too_much(url, path, chunked=chunked) == 413, url
        answer = requests.post(
            url + path,
            timeout=TIMEOUT,
            headers={"Accept": ACCEPT_BOTH},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert answer.status_code in (200, 400), (url, answer.text)


@pytest.mark.slow
@pytest.mark.parametrize(
    "option, why",
    [
        ({"worker_threads": 2}, "half of this worker's 2 threads"),
        ({"max_streams": 1}, "max_streams"),
    ],
    ids=["threads", "max"],
)
def test_an_app_told_its_threads_refuses_a_listen_past_its_share(serve, option, why):
    """``worker_threads=`` (a server without gunicorn's hooks; 2 threads: 1 stream) or
    ``max_streams=1``: the second listen gets the JSON-RPC error (503, with the listen's id), the
    first one stays open and calls are served."""
    srv = serve(build_server(), **option)
    with Client.http(srv.mcp, era="modern", timeout=WAIT) as client:
        first = client.listen(tools=True)
        with pytest.raises(McpError, match=f"1: {why}") as refused:
            client.listen(tools=True)
        assert refused.value.code == -31005 and refused.value.data["limit"] == 1
        assert client.call_tool("echo", {"text": "still"}).content[0].text == "still"
        assert first.acknowledged is not None and not first.closed
        first.close()


@pytest.mark.slow
def test_the_peer_watcher_notices_a_close_and_leaves_a_pipelined_request_unread():
    """The watcher behind gunicorn's ``mcp_ref.on_disconnect``: a peer that closes is noticed; a
    socket with bytes waiting (a pipelined request) is left alone, its bytes unread."""
    watcher = peers.PeerWatcher()
    closing, closing_peer = socket.socketpair()
    pipelining, pipelining_peer = socket.socketpair()
    gone, wrongly_gone = threading.Event(), threading.Event()
    try:
        watcher.watch(pipelining, wrongly_gone.set)
        watcher.watch(closing, gone.set)
        pipelining_peer.sendall(b"GET / HTTP/1.1\r\n")  # sent before the close: seen no later
        closing_peer.close()
        assert gone.wait(WAIT)
        assert watcher.watching() == 0 and not wrongly_gone.is_set()
        assert pipelining.recv(64) == b"GET / HTTP/1.1\r\n"
    finally:
        for sock in (closing, pipelining, pipelining_peer):
            sock.close()
