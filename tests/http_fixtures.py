"""Shared helpers for the HTTP transport tests: real servers on 127.0.0.1 (port 0), raw
Streamable HTTP sessions over ``requests`` with every body validated against the official
schema, an SSE event reader, a header-recording WSGI middleware, and Client.http factories.

Import the fixtures by name in a test module (``from http_fixtures import serve, http_client``).
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager

import pytest
import requests
import urllib3
from conftest import WAIT, WireChecker, schema_errors
from ports import free_port  # noqa: F401 - for the modules that import it from here

LATEST = "2025-11-25"
ACCEPT_BOTH = "application/json, text/event-stream"
JSON_CT = "application/json"
#: requests timeouts: (connect, read) — every raw HTTP exchange is bounded.
TIMEOUT = (WAIT, WAIT)


# -- servers ------------------------------------------------------------------------------------


class Served:
    """A WsgiServer serving in a thread: ``url`` (http://127.0.0.1:PORT), ``mcp``, ``sse``, ``app``."""

    def __init__(self, httpd, app):
        self.httpd = httpd
        self.app = app  # the McpWsgiApp (httpd.app may be a middleware around it)
        self.url = httpd.url
        self.port = httpd.port
        self.mcp = self.url + "/mcp"
        self.sse = self.url + "/sse"
        self.thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"test-httpd-{httpd.port}",
            daemon=True,
        )

    def start(self) -> Served:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        close = getattr(self.app, "close", None)
        if close is not None:
            close()
        self.thread.join(WAIT)


def start(server=None, *, wrap=None, app=None, limits=None, **options) -> Served:
    """Serve ``server`` (the demo by default) or a ready WSGI ``app``; ``wrap(app)`` adds middleware.

    ``limits`` is the WsgiServer's :class:`~mcp_ref.http.wsgi_server.ConnectionLimits`.
    """
    from mcp_ref.http.wsgi_server import WsgiServer
    from mcp_ref.workbench.demo import build_server

    if app is None:
        app = (server or build_server()).wsgi_app(**options)
    httpd = WsgiServer(("127.0.0.1", 0), wrap(app) if wrap else app, limits=limits)
    return Served(httpd, app).start()


@pytest.fixture
def serve():
    """Factory: ``serve(server=None, wrap=None, limits=None, **wsgi_options)`` -> a running :class:`Served`; stopped after."""
    servers: list[Served] = []

    def factory(server=None, **options) -> Served:
        served = start(server, **options)
        servers.append(served)
        return served

    yield factory
    for served in servers:
        served.stop()


@contextmanager
def serving(server=None, **options):
    served = start(server, **options)
    try:
        yield served
    finally:
        served.stop()


# -- middleware -------------------------------------------------------------------------------


class InThread:
    """A stdlib ``socketserver`` server (``httpd``) serving on a thread of its own until :meth:`stop`;
    it notices the stop within 0.05 s (the poll interval of ``serve_forever``)."""

    def __init__(self, httpd):
        self.httpd = httpd
        self.thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        """Stop serving, close the listening socket, and wait (at most WAIT) for the thread."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(WAIT)


class HeaderRecorder:
    """WSGI middleware recording (method, path, headers) of every request it passes on."""

    def __init__(self, app):
        self.app = app
        self.requests: list[tuple[str, str, dict]] = []
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        headers = {
            key[5:].replace("_", "-").lower(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        with self.lock:
            self.requests.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), headers))
        return self.app(environ, start_response)

    def seen(self, method: str | None = None) -> list[dict]:
        with self.lock:
            return [h for m, _, h in self.requests if method is None or m == method]


# -- SSE --------------------------------------------------------------------------------------


class SseReader:
    """Events of a streamed ``requests`` response, read as they arrive (bounded by its read timeout).

    ``next()`` returns a dict (``id``, ``event``, ``data``, ``retry``, ``raw``), or None at the end of
    the body.  Comment-only blocks (keep-alives) are skipped.
    """

    def __init__(self, response):
        self.response = response
        self._chunks = response.iter_content(chunk_size=None)
        self._buffer = b""

    def next(self):
        while True:
            while b"\n\n" not in self._buffer:
                try:
                    chunk = next(self._chunks)
                except StopIteration:
                    return None
                self._buffer += chunk
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            event = {"id": None, "event": None, "data": None, "retry": None, "raw": block}
            data = []
            for line in block.split(b"\n"):
                if line.startswith(b":"):
                    continue
                name, _, value = line.decode().partition(":")
                value = value.removeprefix(" ")
                if name == "data":
                    data.append(value)
                elif name in ("id", "event", "retry"):
                    event[name] = value
            if data:
                event["data"] = "\n".join(data)
            if any(event[k] is not None for k in ("id", "event", "data", "retry")):
                return event

    def messages(
        self, until_id=None, checker: WireChecker | None = None
    ) -> list[tuple[str | None, dict]]:
        """(event id, message) for every data-carrying event, until the answer to ``until_id`` or the end."""
        out = []
        while True:
            event = self.next()
            if event is None:
                return out
            if event["data"]:
                message = json.loads(event["data"])
                if checker is not None:
                    checker("<--", event["data"].encode())
                out.append((event["id"], message))
                if until_id is not None and is_answer(message, until_id):
                    return out

    def close(self) -> None:
        self.response.close()


def is_answer(message, request_id) -> bool:
    return isinstance(message, dict) and "method" not in message and message.get("id") == request_id


# -- raw Streamable HTTP sessions --------------------------------------------------------------


def error_body_errors(body: dict) -> list[str]:
    """An HTTP error's JSON-RPC body (no id: it answers no request) against the 2025-11-25 schema,
    the revision whose JSONRPCErrorResponse makes ``id`` optional."""
    return schema_errors(LATEST, "JSONRPCErrorResponse", body)


def request(method: str, params=None, request_id=1) -> dict:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params=None) -> dict:
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def init_params(version: str = LATEST, capabilities=None) -> dict:
    return {
        "protocolVersion": version,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "raw-http-test", "version": "0"},
    }


class RawSession:
    """One Streamable HTTP session driven with ``requests``; every message either way goes
    through ``checker`` (a WireChecker: schema of the negotiated revision)."""

    def __init__(self, mcp_url: str, checker: WireChecker | None = None):
        self.url = mcp_url
        self.http = requests.Session()
        self.checker = checker if checker is not None else WireChecker()
        self.session_id: str | None = None
        self.version: str | None = None
        self._ids = iter(range(1, 10**9))

    def next_id(self) -> int:
        return next(self._ids)

    def headers(self, *, accept=ACCEPT_BOTH, session=True, version=True, **extra) -> dict:
        headers = {"Accept": accept, "Content-Type": JSON_CT}
        if session and self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if version and self.version:
            headers["MCP-Protocol-Version"] = self.version
        headers.update(extra)
        return headers  # a None value removes that header (requests' merge rule)

    def post(self, message, *, headers=None, stream=False, check=True, **header_options):
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        if check and not isinstance(message, bytes):
            self.checker("-->", data)
        h = self.headers(**header_options)
        h.update(headers or {})
        return self.http.post(self.url, data=data, headers=h, stream=stream, timeout=TIMEOUT)

    def get(self, *, headers=None, stream=True, accept="text/event-stream", **header_options):
        h = self.headers(accept=accept, **header_options)
        h.pop("Content-Type", None)
        h.update(headers or {})
        return self.http.get(self.url, headers=h, stream=stream, timeout=TIMEOUT)

    def delete(self, **header_options):
        h = self.headers(**header_options)
        h.pop("Content-Type", None)
        return self.http.delete(self.url, headers=h, timeout=TIMEOUT)

    def receive_json(self, response) -> object:
        """The JSON body of a 200 reply (validated)."""
        assert response.status_code == 200, (response.status_code, response.text)
        assert response.headers["Content-Type"].split(";")[0] == JSON_CT, response.headers
        self.checker("<--", response.content)
        return response.json()

    def initialize(self, version: str = LATEST, capabilities=None, *, initialized=True):
        """initialize (+ notifications/initialized); returns the HTTP response of the initialize POST."""
        response = self.post(
            request("initialize", init_params(version, capabilities), self.next_id()), version=False
        )
        body = self.receive_json(response)
        assert "result" in body, body
        self.session_id = response.headers.get("Mcp-Session-Id")
        self.version = body["result"]["protocolVersion"]
        if initialized:
            answer = self.post(notification("notifications/initialized"))
            assert answer.status_code == 202, (answer.status_code, answer.text)
        return response

    def call(self, method: str, params=None, **post_options):
        """POST a request; returns (request id, response) — the reply is JSON or SSE."""
        request_id = self.next_id()
        return request_id, self.post(request(method, params, request_id), **post_options)

    def result(self, response, request_id):
        """The answer to ``request_id`` in a 200 reply of either type; (answer, every message before it)."""
        assert response.status_code == 200, (response.status_code, response.text)
        kind = response.headers["Content-Type"].split(";")[0]
        if kind == JSON_CT:
            return self.receive_json(response), []
        assert kind == "text/event-stream", response.headers
        messages = [m for _, m in SseReader(response).messages(request_id, self.checker)]
        assert messages and is_answer(messages[-1], request_id), messages
        return messages[-1], messages[:-1]

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def raw_session():
    """Factory: ``raw_session(mcp_url)`` -> a RawSession; its messages must all be schema-valid."""
    sessions: list[RawSession] = []

    def factory(url: str, checker=None) -> RawSession:
        session = RawSession(url, checker)
        sessions.append(session)
        return session

    yield factory
    for session in sessions:
        session.close()
    for session in sessions:
        session.checker.assert_valid()


# -- Client.http ---------------------------------------------------------------------------------


def _http_clients(**defaults):
    from mcp_ref import Client

    made = []

    def factory(url: str, **options):
        checker = options.pop("trace", None) or WireChecker()
        options.setdefault("timeout", WAIT)
        for key, value in defaults.items():
            if key != "era" or "protocol_version" not in options:
                options.setdefault(key, value)
        client = Client.http(url, trace=checker, **options)
        client.wire = checker
        made.append(client)
        return client

    return factory, made


def _close_all(made) -> None:
    for client in made:
        client.close()
    for client in made:
        client.wire.assert_valid()


@pytest.fixture
def http_client():
    """Factory: ``http_client(url, **Client options)`` -> Client.http with a WireChecker as trace
    (``client.wire``) and timeout WAIT; closed after the test, every message schema-valid."""
    factory, made = _http_clients()
    yield factory
    _close_all(made)


@pytest.fixture
def handshake_http_client():
    """``http_client`` in the handshake era (unless a test pins a revision): sessions, the GET
    stream, resumption, 404 renewal, HTTP+SSE.  The 2026-07-28 era: test_modern_client.py."""
    factory, made = _http_clients(era="handshake")
    yield factory
    _close_all(made)


# -- a balancer -------------------------------------------------------------------------------


class RoundRobin:
    """A plain HTTP balancer on 127.0.0.1 (port 0) that sends each request to the next of
    ``upstreams`` in turn (their base URLs), on a connection of its own, and streams the answer
    back as it comes (SSE included): what a balancer without sticky sessions does.  ``url`` is its
    base; ``served`` lists which upstream took each request, in order."""

    HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}

    def __init__(self, upstreams: list[str]):
        import http.server
        import itertools

        self.upstreams = upstreams
        self.served: list[int] = []
        turns = itertools.count()
        lock = threading.Lock()
        balancer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def forward(self) -> None:
                with lock:
                    turn = next(turns) % len(balancer.upstreams)
                    balancer.served.append(turn)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in RoundRobin.HOP_BY_HOP
                }
                with requests.request(
                    self.command,
                    balancer.upstreams[turn] + self.path,
                    data=body,
                    headers=headers,
                    stream=True,
                    timeout=TIMEOUT,
                ) as answer:
                    self.send_response(answer.status_code)
                    for name, value in answer.headers.items():
                        if name.lower() not in RoundRobin.HOP_BY_HOP:
                            self.send_header(name, value)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    try:
                        for chunk in answer.raw.stream(1024, decode_content=False):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                    except (OSError, requests.RequestException, urllib3.exceptions.HTTPError):
                        self.close_connection = True  # either side went away (one died mid-body)

            do_GET = do_POST = do_DELETE = forward

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="test-round-robin",
            daemon=True,
        )
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(WAIT)
