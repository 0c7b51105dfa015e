"""``InFlight``, the HTTP client's table of requests handed to workers: each step of a request's
way, and giving up on it at each step.  The sockets are real (a socket pair): giving up shuts one
down, and its peer reads the end."""

from __future__ import annotations

import socket

import pytest
from conftest import WAIT

from mcp_ref.http.bounded_reads import Underway
from mcp_ref.http.in_flight import InFlight


@pytest.fixture
def answer_socket():
    """``(the socket an answer comes on, its peer)``; closed after."""
    ours, peer = socket.socketpair()
    peer.settimeout(WAIT)
    yield ours, peer
    ours.close()
    peer.close()


def shut_down(peer: socket.socket) -> bool:
    """Whether the other end was shut down (the peer reads the end of the stream)."""
    return peer.recv(1) == b""


def test_a_request_given_up_on_while_it_waits_for_a_worker_is_not_sent():
    in_flight = InFlight()
    in_flight.submitted(7)
    in_flight.give_up(7)
    assert in_flight.given_up(7)
    assert in_flight.taken(7) is False  # the worker skips it
    in_flight.finished(7)
    assert not in_flight.given_up(7)  # forgotten


def test_dropping_an_unsent_request_drops_only_one_still_waiting():
    in_flight = InFlight()
    in_flight.submitted(1)
    in_flight.submitted(2)
    assert in_flight.taken(2) is True  # sent
    assert in_flight.drop_unsent(1) is True
    assert in_flight.drop_unsent(2) is False  # sent already: its stream is the notice's to end
    assert in_flight.given_up(1) and not in_flight.given_up(2)
    assert in_flight.taken(1) is False


def test_giving_up_on_a_sent_request_shuts_its_answers_socket_down(answer_socket):
    ours, peer = answer_socket
    in_flight = InFlight()
    in_flight.submitted("a")
    assert in_flight.taken("a")
    in_flight.awaiting("a", Underway(ours))
    in_flight.give_up("a")
    assert shut_down(peer)
    assert in_flight.given_up("a")  # an error reading it now is the end of the read


def test_a_socket_watched_after_the_request_was_given_up_on_is_shut_down_at_once(answer_socket):
    ours, peer = answer_socket
    in_flight = InFlight()
    in_flight.submitted("a")
    assert in_flight.taken("a")
    in_flight.give_up("a")  # before its answer's socket is watched
    in_flight.awaiting("a", Underway(ours))
    assert shut_down(peer)


def test_giving_up_touches_no_socket_once_its_connection_went_back_to_the_pool(answer_socket):
    ours, peer = answer_socket
    in_flight = InFlight()
    in_flight.submitted("a")
    assert in_flight.taken("a")
    underway = Underway(ours)
    in_flight.awaiting("a", underway)
    underway.released()  # the connection carries the next request from now on
    in_flight.give_up("a")
    ours.sendall(b"x")  # still open both ways
    assert peer.recv(1) == b"x"


def test_giving_up_on_a_request_not_handed_over_or_finished_does_nothing(answer_socket):
    ours, peer = answer_socket
    in_flight = InFlight()
    in_flight.give_up("never")
    assert not in_flight.given_up("never")
    in_flight.submitted("a")
    assert in_flight.taken("a")
    in_flight.awaiting("a", Underway(ours))
    in_flight.finished("a")
    in_flight.give_up("a")
    assert not in_flight.given_up("a")
    ours.sendall(b"x")
    assert peer.recv(1) == b"x"
