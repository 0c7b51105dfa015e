"""``InFlight``, the HTTP client's table of requests handed to workers: each step of a request's
way, and giving up on it at each step.  The sockets are real (a socket pair): giving up shuts one
down, and its peer reads the end."""

from __future__ import annotations

import socket

import pytest
from conftest import WAIT

from mcp_ref.http.bounded_reads import Underway
from mcp_ref.http.in_flight import GivenUp, InFlight


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


def test_a_request_cancelled_while_it_waits_for_a_worker_is_not_sent():
    in_flight = InFlight()
    in_flight.submitted(7)
    assert in_flight.cancel(7) is True  # nothing of it was sent
    assert in_flight.is_cancelled(7)
    assert in_flight.taken(7) is False  # the worker skips it
    in_flight.finished(7)
    assert not in_flight.is_cancelled(7)  # forgotten


def test_a_request_cancelled_once_taken_is_not_posted_and_its_stream_read_until_given_up(
    answer_socket,
):
    ours, peer = answer_socket
    in_flight = InFlight()
    in_flight.submitted(1)
    assert in_flight.taken(1)
    assert in_flight.cancel(1) is False  # taken: the server is to be told
    with pytest.raises(GivenUp):
        in_flight.check_unsent(1)  # its worker waited for a new session: it does not POST it
    in_flight.submitted(2)
    assert in_flight.taken(2)
    in_flight.check_unsent(2)  # sent
    in_flight.awaiting(2, Underway(ours))
    in_flight.cancel(2)
    assert not in_flight.given_up(2)  # its stream is still read: the server's last word
    ours.sendall(b"x")
    assert peer.recv(1) == b"x"
    in_flight.give_up(2)  # the server was told
    assert shut_down(peer)
    assert in_flight.given_up(2)


def test_giving_up_on_a_sent_request_shuts_its_answers_socket_down(answer_socket):
    ours, peer = answer_socket
    in_flight = InFlight()
    in_flight.submitted("a")
    assert in_flight.taken("a")
    in_flight.awaiting("a", Underway(ours))
    in_flight.give_up("a")
    assert shut_down(peer)
    assert in_flight.given_up("a")  # an error reading it now is the end of the read


def test_closing_shuts_down_every_socket_watched_and_each_one_watched_after(answer_socket):
    ours, peer = answer_socket
    later_ours, later_peer = socket.socketpair()
    later_peer.settimeout(WAIT)
    try:
        in_flight = InFlight()
        in_flight.submitted("a")
        assert in_flight.taken("a")
        in_flight.awaiting("a", Underway(ours))
        in_flight.submitted("b")
        in_flight.close()
        assert shut_down(peer)
        assert in_flight.taken("b") is False  # not sent
        in_flight.awaiting(("notice", 1), Underway(later_ours))  # a notification's, after
        assert shut_down(later_peer)
    finally:
        later_ours.close()
        later_peer.close()


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
