"""The thin HTTP path over https (mcp_ref.transports.http_fast): plain calls go over http.client with
a TLS context as strict as requests' (urllib3's): the CA given (or requests' bundle), the host name
checked, verify=False warned about, a client certificate presented; a certificate requests would
refuse is refused the same way; TLS settings changed on the session send requests requests' way.
A real TLS server on 127.0.0.1 port 0 (tests/tls_fixtures.py: certificates made at test time)."""

from __future__ import annotations

import json
import socket
import ssl
import threading

import pytest
import requests
import urllib3
from conftest import WAIT
from test_http_fast import ERAS, sent_by_requests, tools_server  # noqa: F401 - a fixture
from tls_fixtures import Pki, start_tls

from mcp_ref import Client, Context, Server, ServerUnreachable
from mcp_ref.transports import http_fast


@pytest.fixture
def pki(tmp_path):
    return Pki(tmp_path)


@pytest.fixture
def tls(pki):
    """Factory: ``tls(server=None, cert=None, **options)`` -> a running TlsServed (localhost / 127.0.0.1 by default)."""
    servers = []

    def factory(server=None, cert=None, **options):
        served = start_tls(server or tools_server(), cert or pki.cert("localhost", "127.0.0.1"), **options)
        servers.append(served)
        return served

    yield factory
    for served in servers:
        served.stop()


def lane_for(url: str, **settings) -> http_fast.FastLane | None:
    session = requests.Session()
    for name, value in settings.items():
        setattr(session, name, value)
    return http_fast.open_lane(session, url, connect_timeout=WAIT, max_idle=2)


def drop_idle(lane: http_fast.FastLane) -> None:
    with lane._lock:
        idle, lane._idle = lane._idle, []
    for connection in idle:
        connection.close()


def post_ping(lane: http_fast.FastLane) -> int:
    """POST a ping over ``lane`` (no session: the server answers with some HTTP status) and read the answer."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    exchange = lane.send(body, {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    try:
        response = exchange.answer()
        response.read()
        return response.status
    finally:
        exchange.done(reuse=False)


@pytest.mark.parametrize("era", ERAS)
def test_plain_calls_take_the_thin_path_over_https(tls, pki, sent_by_requests, era):
    srv = tls()
    with Client.http(srv.mcp, era=era, verify=str(pki.ca_path), timeout=WAIT) as client:
        lane = client.session.transport._lane
        assert lane is not None and lane.context is not None
        assert lane.context.verify_mode == ssl.CERT_REQUIRED and lane.context.check_hostname
        assert lane.context.minimum_version >= ssl.TLSVersion.TLSv1_2
        before = sent_by_requests.count("POST")
        assert [client.call_tool("echo", {"text": f"t{i}"}).text for i in range(20)] == [f"t{i}" for i in range(20)]
        # An answer larger than the caller reads ahead (PEEK_SIZE): the rest is read after it, by a worker.
        assert client.call_tool("big", {"size": 200_000}).text == "x" * 200_000
        assert client.call_tool("echo", {"text": "after"}).text == "after"
        assert sent_by_requests.count("POST") == before  # none of them went through requests
        assert lane._idle and all(isinstance(c.sock, ssl.SSLSocket) for c in lane._idle)


@pytest.mark.parametrize("era", ERAS)
def test_an_answer_handed_to_requests_over_https(tls, pki, sent_by_requests, era):
    """A tool that logs while it runs is answered with an SSE stream: the thin POST's answer is handed
    to requests' handling (Exchange.raw over an SSL socket), not sent again."""
    server = Server("tls-sse")

    @server.tool()
    def chatty(ctx: Context) -> str:
        """Logs, then answers."""
        ctx.info("working")
        return "done"

    srv = tls(server)
    logs: list = []
    three = threading.Event()

    def on_log(message) -> None:  # called on the client's reader, possibly after the call returned
        logs.append(message)
        if len(logs) == 3:
            three.set()

    with Client.http(srv.mcp, era=era, verify=str(pki.ca_path), timeout=WAIT, on_log=on_log) as client:
        before = sent_by_requests.count("POST")
        for _ in range(3):
            assert client.call_tool("chatty", {}).text == "done"
        assert sent_by_requests.count("POST") == before
        assert three.wait(WAIT)
        assert [log.data for log in logs] == ["working"] * 3


def test_the_ca_requests_uses_by_default_does_not_know_the_server(tls, pki):
    """verify=True trusts requests' own bundle (certifi), not this test's CA: refused by the thin path as
    by requests, the same kind of error (a certificate verification failure: the server unreachable)."""
    srv = tls()
    with pytest.raises(ServerUnreachable) as by_requests:
        Client.http(srv.mcp, era="modern", timeout=WAIT)
    assert "CERTIFICATE_VERIFY_FAILED" in str(by_requests.value)
    lane = lane_for(srv.mcp)
    assert lane is not None and lane.context is not None
    with pytest.raises(ssl.SSLCertVerificationError):
        post_ping(lane)
    lane.close()
    lane = lane_for(srv.mcp, verify=str(pki.ca_path))
    assert lane is not None
    assert post_ping(lane) >= 200
    lane.close()


@pytest.mark.parametrize("era", ERAS)
def test_a_thin_connection_checks_the_certificate_as_requests_would(tls, pki, tmp_path, era):
    """Once the client is up (initialize went through requests), a new thin connection meets a
    certificate of an unknown CA, then one for another host name: both refused, the call failing as
    a call sent by requests fails (ServerUnreachable naming the verification failure)."""
    srv = tls()
    stranger = Pki(tmp_path, "another CA")
    with Client.http(srv.mcp, era=era, verify=str(pki.ca_path), timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        lane = client.session.transport._lane
        for cert, reason in ((stranger.cert("localhost", "127.0.0.1"), "unable to get local issuer"),
                             (pki.cert("other.example"), "mismatch")):
            srv.use(cert)
            drop_idle(lane)  # the next call opens a new connection (a new handshake)
            with pytest.raises(ServerUnreachable) as refused:
                client.call_tool("echo", {"text": "y"})
            assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value) and reason in str(refused.value)
            # requests refuses the same certificate the same way
            with pytest.raises(requests.exceptions.SSLError, match=reason):
                requests.post(srv.mcp, json={}, verify=str(pki.ca_path), timeout=WAIT)


def test_a_host_name_the_certificate_does_not_name_is_refused(tls, pki):
    srv = tls(cert=pki.cert("other.example"))
    lane = lane_for(srv.mcp, verify=str(pki.ca_path))
    assert lane is not None
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        post_ping(lane)
    lane.close()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")  # those of requests' way (the GET stream)
@pytest.mark.parametrize("era", ERAS)
def test_verify_false_takes_the_thin_path_and_warns(tls, sent_by_requests, era):
    srv = tls()
    with pytest.warns(urllib3.exceptions.InsecureRequestWarning):
        client = Client.http(srv.mcp, era=era, verify=False, timeout=WAIT)
    with client:
        lane = client.session.transport._lane
        assert lane is not None and lane.context is not None and lane.context.verify_mode == ssl.CERT_NONE
        before = sent_by_requests.count("POST")
        with pytest.warns(urllib3.exceptions.InsecureRequestWarning, match="127.0.0.1"):
            assert client.call_tool("echo", {"text": "x"}).text == "x"
        assert sent_by_requests.count("POST") == before


def test_tls_settings_changed_on_the_session_send_requests_the_requests_way(tls, pki, tmp_path, sent_by_requests):
    srv = tls()
    with Client.http(srv.mcp, era="modern", verify=str(pki.ca_path), timeout=WAIT) as client:
        http = client.session.transport.http
        before = sent_by_requests.count("POST")
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        assert sent_by_requests.count("POST") == before
        http.verify = True  # requests' bundle: this server is no longer trusted, and the thin path must not keep trusting it
        with pytest.raises(ServerUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
            client.call_tool("echo", {"text": "y"})
        assert sent_by_requests.count("POST") == before + 1
        http.verify = str(pki.ca_path)
        http.cert = pki.cert("client", client=True)
        before = sent_by_requests.count("POST")
        assert client.call_tool("echo", {"text": "z"}).text == "z"
        assert sent_by_requests.count("POST") == before + 1


def test_a_client_certificate_is_presented(tls, pki):
    srv = tls(client_ca=str(pki.ca_path))
    lane = lane_for(srv.mcp, verify=str(pki.ca_path), cert=pki.cert("client", client=True))
    assert lane is not None
    assert post_ping(lane) >= 200
    lane.close()
    lane = lane_for(srv.mcp, verify=str(pki.ca_path))
    assert lane is not None
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):  # TLS 1.3: the server's alert at the first read
        post_ping(lane)
    lane.close()


def test_settings_requests_would_refuse_leave_it_to_requests(tmp_path, pki):
    missing = str(tmp_path / "missing.pem")
    assert lane_for("https://127.0.0.1:8000/mcp", verify=missing) is None
    assert lane_for("https://127.0.0.1:8000/mcp", verify=str(pki.ca_path), cert=missing) is None
    session = requests.Session()
    session.mount("https://", requests.adapters.HTTPAdapter(max_retries=3))
    assert http_fast.open_lane(session, "https://127.0.0.1:8000/mcp", connect_timeout=1, max_idle=2) is not None
    session.mount("https://", type("Mine", (requests.adapters.HTTPAdapter,), {})())
    assert http_fast.open_lane(session, "https://127.0.0.1:8000/mcp", connect_timeout=1, max_idle=2) is None


def test_requests_ca_bundle_from_the_environment_is_the_one_trusted(tls, pki, monkeypatch, sent_by_requests):
    """verify left True: REQUESTS_CA_BUNDLE (read once, when the client is made) is the CA the thin path trusts too."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pki.ca_path))
    srv = tls()
    with Client.http(srv.mcp, era="modern", timeout=WAIT) as client:
        lane = client.session.transport._lane
        assert lane is not None and lane.verify == str(pki.ca_path)
        before = sent_by_requests.count("POST")
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        assert sent_by_requests.count("POST") == before


def test_the_wsgi_servers_watchdog_peeks_under_tls(tls, pki, monkeypatch):
    """mcp_ref's own WsgiServer peeks at the socket of a client whose response is running, for its end;
    an SSL socket refuses a peek, so it peeks at the bytes under TLS.  Here the client sends more
    (the start of a next request) while its handler runs: the watchdog peeks, finds data, and goes on
    watching, so the client's close then cancels the stateless request."""
    from test_stateless_oneshot import oneshot_server, post

    from mcp_ref.workbench import connection_limits

    peeked, looks = threading.Event(), connection_limits.closed_by_peer

    def looking(watched):
        try:
            return looks(watched)
        finally:
            if any(socket_io.serving for socket_io in watched):
                peeked.set()

    started, cancelled = threading.Event(), threading.Event()
    served = tls(oneshot_server(started, cancelled), stateless=True)
    body, headers = post("modern", "wait_for_cancel", {})
    context = ssl.create_default_context(cafile=str(pki.ca_path))
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", served.port), timeout=WAIT),
                               server_hostname="127.0.0.1")
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    assert started.wait(WAIT)
    sock.sendall(b"POST")  # readable, not ended: the watchdog must peek
    monkeypatch.setattr(connection_limits, "closed_by_peer", looking)
    assert peeked.wait(WAIT)
    sock.close()
    assert cancelled.wait(WAIT)  # the watchdog still watches
    with Client.http(served.mcp, verify=str(pki.ca_path), era="modern", timeout=WAIT) as client:  # the server goes on
        assert client.call_tool("echo", {"text": "after"}).text == "after"

