"""The loopback listener of :class:`~mcp_ref.oauth.browser.LoopbackBrowser` on its own, over real
sockets on 127.0.0.1: what it answers to requests that are not the awaited redirect, and that none
of them ends the user's login (only its timeout, or the redirect, does).

The login runs in a thread (:class:`Login`); each test sends raw HTTP requests to the listener and
reads what it answers before closing the connection.
"""

from __future__ import annotations

import logging
import socket
import threading

import pytest
from conftest import WAIT

from mcp_ref.oauth.browser import LoopbackBrowser, authorization_response
from mcp_ref.oauth.errors import AuthorizationTimeout

STATE = "the-state"
ISSUER = "https://as.example"
#: What an authorization code looks like here: never in a log line.
CODE = "SECRET-CODE"


class Login:
    """``LoopbackBrowser.authorize`` in a thread of its own, with ``check`` (by default the
    client's: :func:`authorization_response` for :data:`STATE`); ``outcome`` holds its result
    (the redirected URL) or what it raised, once ``ended`` is set."""

    def __init__(self, check=None, timeout: float = 2 * WAIT):
        self.browser = LoopbackBrowser(open_browser=False, announce=None)
        redirect = self.browser.redirect_uri()
        self.port = int(redirect.rsplit(":", 1)[1].split("/", 1)[0])
        self.check = check or (lambda target: authorization_response(target, STATE, ISSUER))
        self.outcome: list = []
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(timeout,), daemon=True)
        self.thread.start()

    def _run(self, timeout: float) -> None:
        try:
            self.outcome.append(
                self.browser.authorize(f"{ISSUER}/authorize", timeout, check=self.check)
            )
        except BaseException as exc:  # the test reads it
            self.outcome.append(exc)
        finally:
            self.ended.set()

    def send(self, request: bytes) -> bytes:
        """Send ``request`` on a connection of its own: all the listener answered before closing
        it (each read waited for at most WAIT; the test fails if it is never closed)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=WAIT) as connection:
            connection.sendall(request)
            return read_to_the_end(connection)

    def redirect(self, target: str | None = None) -> bytes:
        """The user's browser following the redirect (``target``: the request target to send)."""
        target = target or f"/callback?code={CODE}&state={STATE}"
        return self.send(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())

    def close(self) -> None:
        self.browser.close()


@pytest.fixture
def login():
    """Factory: ``login(check=..., timeout=...)`` -> a running :class:`Login`, closed after."""
    made: list[Login] = []

    def factory(**options) -> Login:
        made.append(Login(**options))
        return made[-1]

    yield factory
    for each in made:
        each.close()
        each.thread.join(WAIT)


def status_of(answer: bytes) -> int:
    """The status code of an HTTP answer (0 for none)."""
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def test_a_target_that_is_no_url_is_refused_and_the_login_goes_on(login, caplog):
    """A stray (another local process, a web page) sending ``GET //[ HTTP/1.1``, a target that
    ``urlsplit`` cannot read (it takes ``//[`` for an IPv6 host), is answered and closed like any
    other stray; it used to end the user's login with a bare ValueError, its socket left open.
    docs/authorization.md: the login ends at its timeout, whatever else connects."""
    caplog.set_level(logging.DEBUG, logger="mcp_ref.oauth.browser")
    flow = login()
    for target in ("//[", "//[x/callback?state=x", f"//[/callback?code={CODE}&state={STATE}"):
        answer = flow.send(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert status_of(answer) in (400, 404), answer
    assert not flow.ended.is_set(), flow.outcome
    assert status_of(flow.redirect()) == 200
    assert flow.ended.wait(WAIT)
    assert flow.outcome == [f"http://127.0.0.1:{flow.port}/callback?code={CODE}&state={STATE}"]
    assert CODE not in caplog.text


def test_a_check_failing_otherwise_than_with_callback_error_refuses_that_request_only(
    login, caplog
):
    """A ``check`` of the caller's raising something else than CallbackError on one request: that
    request is answered 400 and closed (counted as a stray, logged at DEBUG with the exception's
    type only, never its text or the query), and the login waits on for the redirect."""
    caplog.set_level(logging.DEBUG, logger="mcp_ref.oauth.browser")

    def check(target: str) -> None:
        if "state=broken" in target:
            raise KeyError(f"no good: {target}")
        authorization_response(target, STATE, ISSUER)

    flow = login(check=check)
    answer = flow.redirect(f"/callback?code={CODE}&state=broken")
    assert status_of(answer) == 400, answer
    assert not flow.ended.is_set(), flow.outcome
    assert status_of(flow.redirect()) == 200
    assert flow.ended.wait(WAIT)
    assert flow.outcome == [f"http://127.0.0.1:{flow.port}/callback?code={CODE}&state={STATE}"]
    assert "answered 400 (KeyError)" in caplog.text
    assert CODE not in caplog.text and "no good" not in caplog.text


def test_a_login_ends_at_its_timeout_whatever_strays_sent(login):
    """Strays the listener cannot answer do not end the login before its timeout, nor with
    anything else than AuthorizationTimeout (an AuthorizationError), which counts them."""

    def check(target: str) -> None:
        raise ValueError("a broken check")

    flow = login(check=check, timeout=1.0)
    assert status_of(flow.send(b"GET //[ HTTP/1.1\r\n\r\n")) in (400, 404)
    assert status_of(flow.redirect()) == 400
    assert flow.ended.wait(WAIT)
    [timeout] = flow.outcome
    assert isinstance(timeout, AuthorizationTimeout), timeout
    assert "2 other requests to the listener refused" in str(timeout)


def test_the_redirect_in_absolute_form_is_taken(login):
    """RFC 9112 §3.2.2: "A server MUST accept the absolute-form in requests".  The redirect sent
    as ``GET http://127.0.0.1:PORT/callback?... HTTP/1.1`` (a client speaking to a proxy would)
    is the redirect: reduced to its path and query, checked, and taken."""
    flow = login()
    target = f"http://127.0.0.1:{flow.port}/callback?code={CODE}&state={STATE}"
    assert status_of(flow.redirect(target)) == 200
    assert flow.ended.wait(WAIT)
    assert flow.outcome == [f"http://127.0.0.1:{flow.port}/callback?code={CODE}&state={STATE}"]


@pytest.mark.parametrize(
    "authority",
    ["127.0.0.1:{other}", "localhost:{port}", "evil.example:{port}", "user@127.0.0.1:{port}"],
    ids=["another port", "another host name", "another host", "user information"],
)
def test_an_absolute_form_target_for_another_authority_is_a_stray(login, authority):
    """An absolute-form target naming another authority than the listener's own ``host:port``
    is not for this listener: answered 400 (its check never asked), and the login goes on."""
    checked: list[str] = []

    def check(target: str) -> None:
        checked.append(target)
        authorization_response(target, STATE, ISSUER)

    flow = login(check=check)
    named = authority.format(port=flow.port, other=flow.port + 1 if flow.port < 65535 else 1)
    answer = flow.redirect(f"http://{named}/callback?code={CODE}&state={STATE}")
    assert status_of(answer) == 400, answer
    assert not flow.ended.is_set() and checked == []
    assert status_of(flow.redirect()) == 200
    assert flow.ended.wait(WAIT)
    assert len(checked) == 1


def test_a_redirect_for_another_request_in_absolute_form_is_refused(login):
    """The absolute-form is checked as the origin-form is: another request's redirect (a wrong
    state) is answered 400, and the login waits on."""
    flow = login()
    target = f"http://127.0.0.1:{flow.port}/callback?code=FORGED&state=guess"
    assert status_of(flow.redirect(target)) == 400
    assert not flow.ended.is_set()
    assert status_of(flow.redirect()) == 200
    assert flow.ended.wait(WAIT)


def read_to_the_end(connection: socket.socket) -> bytes:
    """What the listener answered on ``connection`` before closing it (waiting at most WAIT a
    read)."""
    connection.settimeout(WAIT)
    answer = b""
    try:
        while chunk := connection.recv(4096):
            answer += chunk
    except ConnectionResetError:
        pass  # closed with bytes unread: the end too
    return answer
