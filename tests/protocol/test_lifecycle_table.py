"""The lifecycle as data (mcp_ref.lifecycle.RULES / TRANSITIONS / Lifecycle): each row does what
it says, and a connection's phase moves only by the table."""

from __future__ import annotations

import threading

import pytest
from conftest import WAIT

from mcp_ref import CapabilityError, InvalidRequest
from mcp_ref.lifecycle import (
    CLIENT,
    INITIALIZE_ANSWERED,
    INITIALIZED_RECEIVED,
    SERVER,
    STATELESS,
    Every,
    Lifecycle,
    Phase,
)


def test_every_but():
    assert "tools/call" in Every("initialize")
    assert "initialize" not in Every("initialize")
    assert "anything" in Every()


def test_a_new_server_answers_only_initialize_and_ping():
    life = Lifecycle(SERVER)
    life.check_receive("initialize")
    life.check_receive("ping")
    with pytest.raises(InvalidRequest, match="tools/list before initialize"):
        life.check_receive("tools/list")


def test_the_server_phases_in_order():
    life = Lifecycle(SERVER)
    assert not life.advance(
        INITIALIZED_RECEIVED
    )  # initialized before initialize: no such transition
    assert life.phase is Phase.AWAITING_INITIALIZE
    assert life.advance(INITIALIZE_ANSWERED)
    assert life.phase is Phase.AWAITING_INITIALIZED
    life.check_receive("tools/call")
    with pytest.raises(InvalidRequest, match="initialize was already received"):
        life.check_receive("initialize")
    with pytest.raises(CapabilityError, match="notifications/initialized"):
        life.check_send("sampling/createMessage")
    life.check_send("ping")
    assert not life.advance(INITIALIZE_ANSWERED)  # a second initialize never moves it
    assert life.advance(INITIALIZED_RECEIVED)
    assert life.phase is Phase.OPERATING
    life.check_send("sampling/createMessage")
    assert not life.advance(INITIALIZED_RECEIVED)


def test_before_initialize_a_server_may_only_log():
    life = Lifecycle(SERVER)
    assert life.may_notify("notifications/message")
    assert not life.may_notify("notifications/tools/list_changed")
    life.check_send("ping")
    with pytest.raises(CapabilityError, match="has not initialized"):
        life.check_send("roots/list")


def test_a_stateless_request_serves_at_once():
    life = Lifecycle(SERVER)
    assert life.advance(STATELESS)
    assert life.phase is Phase.OPERATING
    handshaken = Lifecycle(SERVER)
    handshaken.advance(INITIALIZE_ANSWERED)
    assert not handshaken.advance(STATELESS)  # only a connection with no handshake


def test_the_client_sends_only_initialize_or_ping_until_answered():
    life = Lifecycle(CLIENT)
    life.check_send("initialize")
    life.check_send("ping")
    with pytest.raises(CapabilityError, match="has not answered initialize"):
        life.check_send("tools/list")
    assert life.advance(INITIALIZE_ANSWERED)
    assert life.phase is Phase.OPERATING
    life.check_send("tools/list")
    assert life.advance(INITIALIZE_ANSWERED)  # a new session after the server forgot ours
    assert life.phase is Phase.OPERATING


def test_the_client_answers_the_server_in_every_phase():
    life = Lifecycle(CLIENT)
    life.check_receive("sampling/createMessage")
    life.advance(INITIALIZE_ANSWERED)
    life.check_receive("roots/list")


def test_what_is_negotiated_is_recorded_before_the_phase_moves():
    life = Lifecycle(SERVER)
    seen = []
    life.advance(INITIALIZE_ANSWERED, lambda: seen.append(life.phase))
    assert seen == [Phase.AWAITING_INITIALIZE]


def test_of_two_concurrent_initializes_exactly_one_moves_the_phase():
    life = Lifecycle(SERVER)
    start = threading.Barrier(8)
    wins = []

    def race() -> None:
        start.wait(WAIT)
        wins.append(life.advance(INITIALIZE_ANSWERED))

    threads = [threading.Thread(target=race) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert sorted(wins) == [False] * 7 + [True]
