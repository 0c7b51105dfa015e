"""What one session, and one client, may hold of an HTTP server: a session whose request runs is
in use (never swept as idle, its answer never lost); a session ended under a running request
answers it with a JSON-RPC error; one client's sessions and its handlers on the shared pool are
bounded, so that other clients keep being served.  Real servers on 127.0.0.1, raw HTTP."""

from __future__ import annotations

import math
import threading

import pytest
from conftest import WAIT
from http_fixtures import (
    RawSession,
    raw_session,  # noqa: F401 - fixture
    serve,  # noqa: F401 - fixture
)
from test_hardening_streams import streams_server
from test_http_server import tool
from test_http_state import Clock

from mcp_ref.http.server import MemorySessionTable


def run_sweep_now(app) -> None:
    """The sweep of idle sessions runs at most once a second, at an ``initialize``: let the next
    one run whatever the real clock says (the table's clock is the test's)."""
    app._last_sweep = -math.inf


def same_session(raw_session, session: RawSession) -> RawSession:
    """Another HTTP client (its own connections) on ``session``: for a request made meanwhile."""
    other = raw_session(session.url, session.checker)
    other.session_id, other.version = session.session_id, session.version
    return other


class Call(threading.Thread):
    """``session.call(method, params)`` on a thread of its own: ``request_id`` and ``response``."""

    def __init__(self, session: RawSession, method: str, params=None):
        super().__init__(daemon=True)
        self.session, self.method, self.params = session, method, params
        self.request_id = self.response = None
        self.start()

    def run(self) -> None:
        self.request_id, self.response = self.session.call(self.method, self.params)

    def answer(self) -> dict:
        """The JSON answer (the call must end within WAIT)."""
        self.join(WAIT)
        assert not self.is_alive()
        return self.session.result(self.response, self.request_id)[0]


# -- a session whose request runs is in use ----------------------------------------------------------


@pytest.mark.parametrize("inline", [True, False])
def test_a_session_whose_request_runs_is_not_swept_as_idle_and_its_answer_arrives(
    serve, raw_session, inline
):
    """2025-11-25 basic/transports §Sending Messages: to a POSTed request the server "MUST either
    return Content-Type: text/event-stream ... or Content-Type: application/json".  A session
    whose request outlives session_idle_timeout used to be swept at another client's
    initialize: its POST ended 202 with no body, the session 404."""
    events: dict = {}
    clock = Clock()
    table = MemorySessionTable(idle_timeout=60, clock=clock)
    srv = serve(streams_server(events), session_table=table, inline_handlers=inline)
    session = raw_session(srv.mcp)
    session.initialize()
    call = Call(same_session(raw_session, session), "tools/call", tool("hold"))
    assert events["started"].acquire(timeout=WAIT)
    clock.now += 61  # the request has run longer than the idle timeout
    run_sweep_now(srv.app)
    raw_session(srv.mcp).initialize()  # another client's initialize sweeps idle sessions
    assert session.session_id in srv.app.sessions
    clock.now += 40
    events["release"].set()
    answer = call.answer()
    assert answer["result"]["content"][0]["text"] == "released"
    clock.now += 50  # idle from its answer: 50 s ago (90 s since the sweep saw it)
    run_sweep_now(srv.app)
    raw_session(srv.mcp).initialize()
    assert session.call("ping")[1].status_code == 200


@pytest.mark.parametrize("inline", [True, False])
def test_a_session_deleted_under_a_running_request_answers_it_with_an_error(
    serve, raw_session, inline
):
    """The POST of a request whose session ends (DELETE) gets a JSON-RPC error answering it, not
    202 with no body; its handler is cancelled."""
    events: dict = {}
    srv = serve(streams_server(events), inline_handlers=inline)
    session = raw_session(srv.mcp)
    session.initialize()
    call = Call(same_session(raw_session, session), "tools/call", tool("hold"))
    assert events["started"].acquire(timeout=WAIT)
    assert session.delete().status_code == 200
    answer = call.answer()
    assert answer["id"] == call.request_id
    assert answer["error"]["code"] == -32000
    assert answer["error"]["message"].startswith("Session ended before this request was answered")
    assert events["cancelled"].acquire(timeout=WAIT)
    assert session.call("ping")[1].status_code == 404
