"""Whose question is it: the target's questions (roots, elicitation, sampling) and log messages
reach the client whose request they are about, and never another client; and a question a client
did not declare it takes is not put to it.

The library form (``proxy_server``) served over HTTP on 127.0.0.1 port 0, in front of
tests/servers/proxy_asking_target.py (a handshake-era server that asks outside its tool calls, and
late) launched on stdio, a real subprocess.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from conftest import WAIT, Collector
from proxy_peers import served_proxy

from mcp_ref import Client, McpError
from mcp_ref.errors import MissingRequiredClientCapabilityError

pytestmark = pytest.mark.slow

ASKING_TARGET = [
    sys.executable,
    str(Path(__file__).resolve().parents[1] / "servers" / "proxy_asking_target.py"),
]


def served(**options):
    """A proxy of the asking target served over HTTP; yields ``(proxy, url)``."""
    return served_proxy(ASKING_TARGET, **options)


def complete(client: Client, value: str) -> list[str]:
    """The target's completion of ``greet``'s name (what its question for the roots got)."""
    result = client.request(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "name", "value": value},
        },
    )
    return result["completion"]["values"]


def cancel_completion(client: Client, logs: Collector, value: str) -> None:
    """Start the target's completion of ``greet``'s name as ``value``, and cancel it once the
    target has logged (to ``client``'s ``logs``) that it is completing it."""
    params = {
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "name", "value": value},
    }
    call = client.connection.start("completion/complete", params)
    logs.wait_until(lambda messages: any(f"completing {value}" in m.data for m in messages))
    call.cancel("the user gave up")


# -- a session's own connection: its questions outside a forwarded call --------------------------


def test_a_question_outside_a_call_reaches_the_session_that_declared_roots():
    # The target asks for the roots while it completes (no tool call in flight): the session's
    # back connection declared roots on its client's behalf, so its client is asked (2025-11-25
    # client/roots: -32601 would mean the client does not support roots).
    with (
        served() as (_, url),
        Client.http(url, era="handshake", timeout=WAIT, roots=["file:///home/bob"]) as client,
    ):
        (values,) = complete(client, "roots")
        assert "file:///home/bob" in values and "error" not in values


def test_the_target_asks_for_the_roots_after_a_session_says_they_changed():
    # client/roots: a server told the roots changed asks for them again, on the session's own
    # back connection, with no request of the client's in flight.
    changed = Collector()
    with (
        served() as (_, url),
        Client.http(
            url,
            era="handshake",
            timeout=WAIT,
            roots=["file:///home/bob"],
            on_list_changed=changed,
        ) as client,
    ):
        assert client.list_tools()  # the session's back connection is open
        client.set_roots(["file:///home/bob", "file:///srv"])
        changed.wait_until(lambda kinds: "tools" in kinds)
        seen = {tool.name: tool.description for tool in client.list_tools()}["roots_seen"]
        assert "file:///srv" in seen and "error" not in seen


# -- a shared connection: what names no request reaches nobody but the one client it can be ------


def test_a_log_message_of_one_clients_request_reaches_no_other_client():
    # Alice's call and Bob's completion run on the shared connection at once: the target's log
    # message names no request, so it reaches neither (it could be either's).  Alone, Bob's
    # completion gets its own.
    alice_logs, bob_logs = Collector(), Collector()
    with (
        served() as (_, url),
        Client.http(url, era="modern", timeout=WAIT, on_log=alice_logs, log_level="debug") as alice,
        Client.http(url, era="modern", timeout=WAIT, on_log=bob_logs, log_level="debug") as bob,
    ):
        started = threading.Event()
        held = alice.start_tool_call("hold", on_progress=lambda *report: started.set())
        assert started.wait(WAIT)
        assert complete(bob, "B-SECRET") == []
        assert held.result().text == "held"  # after every log message sent for its request
        assert [m.data for m in alice_logs if "B-SECRET" in str(m.data)] == []
        assert complete(bob, "B-ALONE") == []
        bob_logs.wait_until(lambda logs: any("completing B-ALONE" in m.data for m in logs))
    assert [m.data for m in bob_logs if "B-SECRET" in str(m.data)] == []


def test_a_question_during_another_clients_call_is_put_to_neither_client():
    # Bob's completion asks for the roots while Alice's call runs on the same connection: the
    # question names no request, so the target is refused rather than told Alice's roots.
    with (
        served() as (_, url),
        Client.http(url, era="modern", timeout=WAIT, roots=["file:///home/alice"]) as alice,
        Client.http(url, era="modern", timeout=WAIT, roots=["file:///home/bob"]) as bob,
    ):
        started = threading.Event()
        held = alice.start_tool_call("hold", on_progress=lambda *report: started.set())
        assert started.wait(WAIT)
        (values,) = complete(bob, "roots")
        assert "alice" not in values and values.startswith("error: Request refused")
        assert held.result().text == "held"
        # alone, a 2026 completion cannot ask its client either (mrtr §Supported Requests)
        (alone,) = complete(bob, "roots")
        assert alone.startswith("error: Request refused")


def test_a_cancelled_calls_late_question_is_refused_and_reaches_no_other_client():
    # Alice cancels her call; the target asks its question all the same.  It is refused (her
    # client is asked nothing more for it, and no other client is).  The target never answers the
    # cancelled call, so its turn is held for CANCEL_GRACE, then its process closed: Bob's call,
    # which waited for the turn, then runs on a new process, and is asked its own question only.
    asked_bob, target_said = Collector(), Collector()

    def bob_answers(params):
        asked_bob(params.message)
        return {"action": "accept", "content": {"name": "Bob"}}

    with (
        served(client_options={"timeout": WAIT, "stderr": target_said}) as (_, url),
        Client.http(url, era="modern", timeout=WAIT) as alice,
        Client.http(url, era="modern", timeout=WAIT, elicitation_handler=bob_answers) as bob,
    ):
        started = threading.Event()
        late = alice.start_tool_call("late", on_progress=lambda *report: started.set())
        assert started.wait(WAIT)
        late.cancel("the user gave up")
        mine = bob.call_tool("ask").text
        said = target_said.wait_until(lambda lines: any(line.startswith("late ") for line in lines))
    assert asked_bob.items == ["A question of this call"]
    assert mine == "mine: accept {'name': 'Bob'}"
    (late_said,) = [line for line in said if line.startswith("late ")]
    assert late_said.startswith("late error: Request refused") and "was cancelled" in late_said


# -- what a 2026 client declared: a question it did not declare is never sent -------------------


@pytest.mark.parametrize("tools", [False, True])
def test_sampling_with_tools_reaches_only_a_2026_client_that_declared_them(tools):
    # 2026-07-28 client/sampling: "Servers MUST NOT send tool-enabled sampling requests to Clients
    # that have not declared support for tool use via the sampling.tools capability"; the
    # request ends with -32021 naming it instead (as mcp_ref's own server answers).
    asked = Collector()

    def model(params):
        asked(params)
        return {"role": "assistant", "content": {"type": "text", "text": "sunny"}, "model": "m"}

    with (
        served() as (_, url),
        Client.http(
            url, era="modern", timeout=WAIT, sampling_handler=model, sampling_tools=tools
        ) as client,
    ):
        if tools:
            assert "sunny" in client.call_tool("sample_with_tools").text
            assert asked.items[0].tools[0]["name"] == "weather"
            return
        with pytest.raises(MissingRequiredClientCapabilityError) as caught:
            client.call_tool("sample_with_tools")
        assert caught.value.data["requiredCapabilities"] == {"sampling": {"tools": {}}}
        assert asked.items == []


def test_a_handshake_era_client_that_takes_form_mode_only_is_never_sent_a_url():
    # 2025-11-25 client/elicitation: "Servers MUST NOT send elicitation requests with modes that
    # are not supported by the client": a target that does is refused by the proxy, as the
    # client would refuse it, and the client is sent nothing.
    received = Collector()
    with (
        served() as (_, url),
        Client.http(
            url,
            era="handshake",
            timeout=WAIT,
            elicitation_handler=lambda params: {"action": "accept"},
            trace=lambda direction, data: received(data) if direction == "<--" else None,
        ) as client,
    ):
        text = client.call_tool("visit_anyway").text
    assert text.startswith("error: Invalid params") and "url-mode elicitation" in text
    assert not [data for data in received if b"elicitation/create" in data]


# -- a question that ends before its answer: withdrawn at the front too ---------------------------


def waits_to_be_cancelled(withdrawn: threading.Event):
    """An elicitation handler whose user never answers: it sets ``withdrawn`` once its request is
    cancelled (within WAIT), then declines."""

    def handler(params, context):
        if context.cancelled.wait(WAIT):
            withdrawn.set()
        return {"action": "decline"}

    return handler


def test_a_question_the_target_withdraws_is_withdrawn_at_the_handshake_era_client():
    # 2025-11-25 basic/utilities/cancellation: the target gives up on its question (its
    # notifications/cancelled); the proxy's own request to the client in front, which put the
    # question to it, is cancelled too, as the target's would be directly.
    withdrawn = threading.Event()
    with (
        served() as (_, url),
        Client.http(
            url,
            era="handshake",
            timeout=WAIT,
            elicitation_handler=waits_to_be_cancelled(withdrawn),
        ) as client,
    ):
        assert client.call_tool("impatient", {"seconds": 0.5}).text.startswith("gave up")
        assert withdrawn.wait(WAIT)


def test_a_question_of_a_call_that_timed_out_is_withdrawn_at_the_handshake_era_client():
    # The forwarded call passes its timeout while the client in front is still asked: the call
    # fails, and so does the question it asked (nobody waits for its answer any more).
    withdrawn = threading.Event()
    with (
        served(client_options={"timeout": 1}) as (_, url),
        Client.http(
            url,
            era="handshake",
            timeout=WAIT,
            elicitation_handler=waits_to_be_cancelled(withdrawn),
        ) as client,
    ):
        with pytest.raises(McpError):
            client.call_tool("ask")
        assert withdrawn.wait(WAIT)


def test_a_parked_call_the_target_answers_before_the_retry_gives_the_retry_its_result():
    # A 2026 client is asked the target's question (input_required); the target gives up on it
    # and answers the call before the client's retry comes.  The retry gets that answer, kept for
    # it (within ask_timeout), not -32602 and a tool to run again.
    with served() as (proxy, url):

        def late_user(params):
            (parked,) = proxy._parked.values()
            with parked.lock:  # the proxy has the target's answer to the call by now
                assert parked.lock.wait_for(lambda: parked.outcome is not None, WAIT)
            return {"action": "accept", "content": {"name": "Ada"}}

        with Client.http(url, era="modern", timeout=WAIT, elicitation_handler=late_user) as client:
            assert client.call_tool("impatient", {"seconds": 0.5}).text.startswith("gave up")


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_cancelled_completion_is_cancelled_at_the_target(era):
    # 2025-11-25 basic/utilities/cancellation: a request forwarded as it is (a listing, a
    # completion) is cancelled at the target when its client cancels it, as a forwarded call is
    # (within WAIT: long before the proxy's own timeout would give it up).
    logs, target_said = Collector(), Collector()
    with (
        served(client_options={"timeout": 3 * WAIT, "stderr": target_said}) as (_, url),
        Client.http(url, era=era, timeout=WAIT, on_log=logs, log_level="debug") as client,
    ):
        cancel_completion(client, logs, "wait")
        said = target_said.wait_until(lambda lines: any("completion " in line for line in lines))
    assert [line for line in said if line.startswith("completion ")] == ["completion cancelled"]


def test_a_cancelled_completion_the_target_goes_on_with_logs_to_no_other_client(monkeypatch):
    # 2025-11-25 basic/utilities/cancellation: receivers "MAY ignore" a cancellation.  A
    # handshake-era target still at work on a cancelled completion logs about it (a log message
    # names no request, server/utilities/logging) while another client's listing is in flight on
    # the same connection (the watcher): the cancelled completion still counts there until the
    # target answers it, so that message is nobody's, never the other client's.  (CANCEL_GRACE as
    # long as the test's waits: this target never answers the cancelled completion.)
    monkeypatch.setattr("mcp_ref.proxy.back.CANCEL_GRACE", WAIT)
    a_logs, b_logs, target_said = Collector(), Collector(), Collector()
    with (
        served(client_options={"timeout": 3 * WAIT, "stderr": target_said}) as (_, url),
        Client.http(url, era="modern", timeout=WAIT, on_log=a_logs, log_level="debug") as a,
        Client.http(url, era="modern", timeout=WAIT, on_log=b_logs, log_level="debug") as b,
    ):
        cancel_completion(a, a_logs, "ignore A-SECRET")
        target_said.wait_until(lambda lines: "ignoring the cancellation" in lines)
        assert b.list_tools()  # answered once the target logged, this listing in flight
        target_said.wait_until(lambda lines: "logged still completing" in lines)
        drained = threading.Event()  # B's callbacks of what came before its answer have run
        assert b.connection.session.call_soon(drained.set, keep=True)
        assert drained.wait(WAIT)
    assert not [m.data for m in b_logs if "A-SECRET" in str(m.data)]


def test_a_cancelled_completion_the_target_never_answers_ends_its_connection_after_the_grace():
    # A handshake-era command target that stops as asked never answers the cancelled completion:
    # the shared connection (the watcher) it still counts on is closed once CANCEL_GRACE has
    # passed, its process with it, and the next request opens another.
    logs, target_said = Collector(), Collector()
    with (
        served(client_options={"timeout": 3 * WAIT, "stderr": target_said}) as (proxy, url),
        Client.http(url, era="modern", timeout=WAIT, on_log=logs, log_level="debug") as client,
    ):
        watcher = proxy.watcher
        cancel_completion(client, logs, "wait")
        target_said.wait_until(lambda lines: "completion cancelled" in lines)
        assert watcher.closed.wait(WAIT)  # unanswered after CANCEL_GRACE
        assert watcher.running == []
        assert client.list_tools()  # on a connection opened again
        assert proxy.watcher is not watcher
