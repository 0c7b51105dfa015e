"""A third party's gate that hides items from everyone alike (``restricts = False``: what one
principal sees never differs from another's) is asked by every access check, as ``Policy`` is:
completion, 2026-07-28 listen streams, list-changed notifications and the 2026-07-28 header
checks hide what ``tools/call`` hides.  ``restricts`` only says whether one verdict may stand for
every principal (caching hints, the verdicts of a list change).

The server is tests/servers/shared_gate_server.py, run as a real stdio subprocess, and served
over HTTP on 127.0.0.1 (port 0).
"""

from __future__ import annotations

import sys
import threading

import pytest
from conftest import SERVERS, WAIT, InMemory
from http_fixtures import serve  # noqa: F401 - a fixture

from mcp_ref import Client, McpError

ERAS = ("handshake", "modern")
GATED = InMemory("shared_gate_server", "build")


def stdio_client(era: str, **options) -> Client:
    """A Client of shared_gate_server run as a subprocess, speaking ``era``."""
    command = [sys.executable, str(SERVERS / "shared_gate_server.py")]
    return Client.stdio(command, era=era, timeout=WAIT, stderr="discard", **options)


def refusal(call, name: str) -> tuple:
    """The error ``call()`` raises, with ``name`` written as ``<name>`` (to compare two)."""
    with pytest.raises(McpError) as refused:
        call()
    error = refused.value
    return (
        error.code,
        error.message.replace(name, "<name>"),
        repr(error.data).replace(name, "<name>"),
    )


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_completing_a_prompt_the_gate_hides_answers_as_for_a_missing_one(era):
    # 2025-11-25 server/utilities/completion §Security: "Prevent completion-based information
    # disclosure".  Before: the hidden prompt's completion function answered its values.
    with stdio_client(era) as client:
        assert [prompt.name for prompt in client.list_prompts()] == ["public"]
        assert client.complete(argument="topic", value="", prompt="public").values == ["weather"]
        hidden = refusal(
            lambda: client.complete(argument="customer", value="", prompt="internal_runbook"),
            "internal_runbook",
        )
        missing = refusal(
            lambda: client.complete(argument="customer", value="", prompt="nothing_here"),
            "nothing_here",
        )
        assert hidden == missing
        assert hidden[0] == -32602


@pytest.mark.slow
def test_a_listen_stream_never_carries_a_resource_the_gate_hides():
    seen, arrived = [], threading.Event()

    def collect(method, params):
        seen.append(params.get("uri"))
        if params.get("uri") == "mem://public/doc":
            arrived.set()

    with stdio_client("modern") as client:
        uris = ["mem://internal/doc", "mem://public/doc"]
        with client.listen(resource_uris=uris, on_notification=collect) as stream:
            # acknowledged as a URI nothing serves would be: the acknowledgment tells nothing
            assert sorted(stream.acknowledged["resourceSubscriptions"]) == uris
            client.call_tool("touch", {"uri": "mem://internal/doc"})
            client.call_tool("touch", {"uri": "mem://public/doc"})  # after it, on the same stream
            assert arrived.wait(WAIT)
        assert seen == ["mem://public/doc"]


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_a_tool_the_gate_hides_is_never_announced(era):
    # 2025-11-25 server/tools §List Changed Notification: "When the list of available tools
    # changes" — the caller's list did not change when a tool it cannot see was added.
    heard, cond = [], threading.Condition()

    def hear(what):
        with cond:
            heard.append(what)
            cond.notify_all()

    with stdio_client(era, on_list_changed=hear, on_resource_updated=hear) as client:
        client.subscribe("mem://public/doc")
        client.call_tool("register", {"name": "internal_admin"})
        client.call_tool("register", {"name": "extra"})
        client.call_tool("touch", {"uri": "mem://public/doc"})  # the marker: after them all
        with cond:
            assert cond.wait_for(lambda: "mem://public/doc" in heard, WAIT)
        assert heard == ["tools", "mem://public/doc"]
        assert "internal_admin" not in {tool.name for tool in client.list_tools()}


@pytest.mark.slow
def test_the_declared_headers_of_a_tool_the_gate_hides_are_not_checked(serve):
    # A header mismatch would tell the tool exists: a hidden tool answers as a missing one.
    with Client.http(serve(GATED.build()).mcp, era="modern", timeout=WAIT) as client:
        hidden = refusal(
            lambda: client.call_tool("internal_routed", {"region": "eu"}), "internal_routed"
        )
        missing = refusal(
            lambda: client.call_tool("nothing_here", {"region": "eu"}), "nothing_here"
        )
        assert hidden == missing
