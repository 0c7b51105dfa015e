"""Answers trickled a byte at a time, each byte well within the read timeout: the OAuth client's
metadata and token fetches, and a JWK Set download, each end at their ``timeout`` in all
(:func:`mcp_ref.http.bounded_reads.read_within`), whatever framing the body has, and so does a
header section trickled (:func:`mcp_ref.http.bounded_reads.exchange_within`).

The peer is a raw socket server on 127.0.0.1 (port 0), so that the body's framing (a
Content-Length, or chunked with its chunk-size line itself trickled) is exactly what the test says.
"""

from __future__ import annotations

import json
import logging
import socket
import threading

import pytest
import requests
from conftest import WAIT, outcome_within

from mcp_ref import Client, OAuth
from mcp_ref.http.framing import framing_session
from mcp_ref.http.wsgi_server import WsgiServer
from mcp_ref.oauth.discovery import fetch_json
from mcp_ref.oauth.errors import MetadataError, TokenError

#: Seconds between two bytes of a trickled answer (each read waits this long at most).
GAP = 0.1
#: The bound the tests give: a read is never idle that long, the whole body takes far longer.
TIMEOUT = 0.5
#: Bytes trickled: ``GAP`` x this is well past ``WAIT``.
TRICKLED = 400


class Peer:
    """A raw HTTP/1.1 server: ``answers[path]`` is ``(head, body, trickled)``; a trickled answer's
    bytes (its head's last line ending, then its body) go one every :data:`GAP` seconds."""

    def __init__(self):
        self.answers: dict[str, tuple[bytes, bytes, bool]] = {}
        self.stop = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def json(self, path: str, document: dict) -> None:
        body = json.dumps(document).encode()
        self.answers[path] = (_head(len(body)), body, False)

    def trickle(self, path: str, *, chunked: bool = False) -> None:
        body = b"{" + b" " * TRICKLED + b"}"
        if chunked:
            # the chunk-size line itself trickles: "190" ... then the chunk
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            head += b"Transfer-Encoding: chunked\r\n\r\n"
            body = b"0" * TRICKLED + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
            self.answers[path] = (head, body, True)
        else:
            self.answers[path] = (_head(len(body)), body, True)

    def trickle_head(self, path: str) -> None:
        """The status line at once, then a header field a byte at a time (never its end)."""
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: "
        self.answers[path] = (head, b"a" * TRICKLED, True)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.connections.append(connection)
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(WAIT)
            try:
                while not self.stop.is_set():
                    request = b""
                    while b"\r\n\r\n" not in request:
                        data = connection.recv(65536)
                        if not data:
                            return
                        request += data
                    head, _, rest = request.partition(b"\r\n\r\n")
                    length = next(
                        (
                            int(line.split(b":")[1])
                            for line in head.split(b"\r\n")
                            if line.lower().startswith(b"content-length:")
                        ),
                        0,
                    )
                    while len(rest) < length:
                        rest += connection.recv(65536)
                    path = head.split(b" ")[1].decode().split("?")[0]
                    answer, body, trickled = self.answers.get(path, (_head(0, 404), b"", False))
                    if not trickled:
                        connection.sendall(answer + body)
                        continue
                    connection.sendall(answer)
                    for byte in body:
                        if self.stop.wait(GAP):
                            return
                        connection.sendall(bytes([byte]))
            except OSError:  # the client gave up: shut down, reset
                return

    def close(self) -> None:
        self.stop.set()
        for connection in [self.listener, *self.connections]:  # wakes accept(), recv()
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed already
                pass
        self.listener.close()
        for thread in self.threads:
            thread.join(WAIT)


def _head(length: int, status: int = 200) -> bytes:
    reason = {200: b"OK", 404: b"Not Found"}[status]
    return b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
        status,
        reason,
        length,
    )


@pytest.fixture
def peer():
    served = Peer()
    yield served
    served.close()


@pytest.mark.parametrize("session", [requests.Session, framing_session], ids=["plain", "mcp_ref"])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_trickled_metadata_ends_at_the_timeout_in_all(peer, chunked, session):
    """``fetch_json(timeout=)`` bounds the whole body: each byte comes within the read timeout,
    the document never within the bound (a chunk-size line trickled as well); through a session of
    any adapter (mcp_ref's keeps the deadline of the whole exchange, another one the body's)."""
    peer.trickle("/.well-known/oauth-protected-resource", chunked=chunked)
    url = peer.url + "/.well-known/oauth-protected-resource"
    with session() as http:
        outcome = outcome_within(lambda: fetch_json(http, url, timeout=TIMEOUT), WAIT)
        assert isinstance(outcome, MetadataError), outcome
        assert "ReadTimeout" in str(outcome)
        # the session serves on: the next fetch from that origin gets its own answer
        peer.json("/fine", {"resource": "x"})
        assert fetch_json(http, peer.url + "/fine", timeout=WAIT) == (200, {"resource": "x"})


def test_a_metadata_document_read_within_its_bound_keeps_the_connection(peer):
    """A body read whole goes back to the pool: the timer on it never touches the connection."""
    peer.json("/a", {"n": 1})
    peer.json("/b", {"n": 2})
    with requests.Session() as http:
        assert fetch_json(http, peer.url + "/a", timeout=WAIT) == (200, {"n": 1})
        assert fetch_json(http, peer.url + "/b", timeout=WAIT) == (200, {"n": 2})
    assert len(peer.threads) == 2  # the listener's and one connection's


def test_a_trickled_header_section_ends_at_the_timeout_and_its_connection_is_not_reused(peer):
    """A status line, then a header field a byte at a time: http.client takes 100 header lines of
    64 KiB, each read within the read timeout, so only a deadline over the whole exchange ends
    it.  ``fetch_json(timeout=)`` through mcp_ref's adapter fails then, its connection is closed
    (never back in the pool), and the session serves on."""
    peer.trickle_head("/.well-known/oauth-authorization-server")
    url = peer.url + "/.well-known/oauth-authorization-server"
    with framing_session() as http:
        outcome = outcome_within(lambda: fetch_json(http, url, timeout=TIMEOUT), WAIT)
        assert isinstance(outcome, MetadataError), outcome
        assert "ReadTimeout" in str(outcome)
        pool = http.get_adapter(url).poolmanager.connection_from_url(url)
        assert all(connection is None for connection in list(pool.pool.queue))
        peer.json("/fine", {"resource": "x"})
        assert fetch_json(http, peer.url + "/fine", timeout=WAIT) == (200, {"resource": "x"})


def _authorization_server(peer) -> None:
    peer.json(
        "/.well-known/oauth-authorization-server",
        {
            "issuer": peer.url,
            "token_endpoint": peer.url + "/token",
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        },
    )


@pytest.mark.parametrize(
    ("trickled", "error"),
    [
        ("/token", TokenError),
        ("/.well-known/oauth-authorization-server", MetadataError),
    ],
    ids=["token", "metadata"],
)
@pytest.mark.parametrize("part", ["body", "head"])
def test_a_trickled_authorization_server_ends_at_the_oauth_timeout(peer, trickled, error, part):
    """The MCP server's 401 names resource metadata whose authorization server answers its
    metadata or its token endpoint a byte at a time, the body or the header section:
    ``OAuth(timeout=)`` ends it, through OAuth's own session."""
    _authorization_server(peer)
    if part == "body":
        peer.trickle(trickled)
    else:
        peer.trickle_head(trickled)
    outcome = _client_against(peer)
    assert isinstance(outcome, error), outcome
    assert "ReadTimeout" in str(outcome)


def _client_against(peer):
    """What ``Client.http`` with ``OAuth(timeout=TIMEOUT)`` ends with, at an MCP server whose 401
    names ``peer`` as its authorization server (within WAIT)."""

    def mcp(environ, start_response):
        if environ["PATH_INFO"].startswith("/.well-known/oauth-protected-resource"):
            body = json.dumps({"resource": mcp_url, "authorization_servers": [peer.url]}).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        start_response("401 Unauthorized", [("WWW-Authenticate", "Bearer")])
        return [b""]

    httpd = WsgiServer(("127.0.0.1", 0), mcp)
    serving = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    serving.start()
    mcp_url = httpd.url + "/mcp"
    try:
        auth = OAuth("id", "secret", grant="client_credentials", timeout=TIMEOUT)
        return outcome_within(lambda: Client.http(mcp_url, auth=auth, timeout=WAIT), WAIT)
    finally:
        httpd.shutdown()
        httpd.server_close()
        serving.join(WAIT)


@pytest.mark.parametrize("part", ["body", "head"])
def test_a_trickled_jwk_set_is_given_up_at_the_timeout(peer, caplog, part):
    """``JwtVerifier(timeout=)`` bounds the whole download, its header section too: a JWK Set
    trickled a byte at a time is given up then, and the token check answers (no key: refused)
    instead of waiting."""
    pytest.importorskip("jwt")
    from mcp_ref.oauth.jwt_verifier import JwtVerifier

    if part == "body":
        peer.trickle("/jwks")
    else:
        peer.trickle_head("/jwks")
    verifier = JwtVerifier(
        peer.url + "/jwks",
        issuer="https://issuer.example",
        audience="https://mcp.example.com/mcp",
        timeout=TIMEOUT,
    )
    # a token naming a key: the set is fetched for it (its signature is never reached)
    token = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIiwidHlwIjoiYXQrand0In0.eyJhIjoxfQ.c2ln"
    with caplog.at_level(logging.WARNING, "mcp_ref.oauth.jwt_verifier"):
        assert outcome_within(lambda: verifier.verify(token), WAIT) is None
    assert f"took over {TIMEOUT:g} s" in caplog.text
