"""The proxy's matrix: front era x front transport x back transport x the target's eras.

Each cell runs ``mcp-ref proxy`` as a subprocess (on stdio, or over HTTP on 127.0.0.1) in front of
tests/servers/proxy_target.py (a subprocess on stdio, or over HTTP) that speaks the handshake era
only, 2026-07-28 only, or both; an mcp_ref Client in the front era then checks every feature the
proxy carries across, in one scenario: tools (pages, schemas, structured output), progress, logging,
elicitation, sampling and roots asked by the target, resources and templates (and not found),
prompts, completion, a subscription and its update, a list change, and cancellation.
"""

from __future__ import annotations

import threading

import pytest
from conftest import WAIT, Collector
from proxy_peers import (
    as_target,
    proxy_command,
    start_proxy_http,
    start_target_http,
    target_command,
)

from mcp_ref import Client
from mcp_ref.errors import ResourceNotFound

ROOT_URI = "file:///tmp/proxied-root"


def sampling(params):
    """The front client's model."""
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "model says hi"},
        "model": "test-model",
    }


def elicitation(params):
    """The front client's user."""
    return {"action": "accept", "content": {"name": "Ada"}}


def front_client(where: str, url_or_command, era: str, events: dict) -> Client:
    """An mcp_ref client in ``era`` (handshake: 2025-11-25) in front of the proxy."""
    options = dict(
        timeout=WAIT,
        sampling_handler=sampling,
        elicitation_handler=elicitation,
        roots=[ROOT_URI],
        on_log=events["log"],
        on_list_changed=events["changed"],
        on_resource_updated=events["updated"],
    )
    if era == "handshake":
        options["protocol_version"] = "2025-11-25"
    else:
        options["era"] = "modern"
    if where == "stdio":
        return Client.stdio(url_or_command, stderr="capture", **options)
    return Client.http(url_or_command, **options)


def exercise(client: Client, back_era: str, front_era: str, events: dict) -> None:
    """Every feature, through the proxy."""
    assert client.era == front_era
    assert client.server_info.name == f"target-{back_era}"
    assert client.instructions == "The server behind the proxy."
    first_page = client.list_tools_page()
    assert len(first_page.items) == 3 and first_page.next_cursor  # the target's pages and cursors
    tools = {tool.name: tool for tool in client.list_tools()}
    assert {"echo", "add", "work", "slow", "touch", "add_tool"} <= set(tools)
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert client.call_tool("echo", {"text": "through"}).text == "through"
    assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"sum": 5}

    # progress, a log message, and the target's elicitation, sampling and roots
    progress = Collector()
    result = client.call_tool("work", {"steps": 2}, on_progress=progress)
    assert result.text == f"Ada|model says hi|1 roots|{ROOT_URI}", result
    values = [item[0] for item in progress.items]
    assert values == sorted(set(values)) and values[-1] == 2, progress
    logged = events["log"].wait_until(lambda items: any("working in" in m.data for m in items))
    assert any(m.level == "info" for m in logged)

    # resources, templates, prompts, completion
    assert "note://1" in [r.uri for r in client.list_resources()]
    assert "note://{id}/text" in [t.uri_template for t in client.list_resource_templates()]
    assert client.read_resource("note://1").contents[0].text == "note one"
    assert client.read_resource("note://7/text").contents[0].text == "note 7"
    with pytest.raises(ResourceNotFound):
        client.read_resource("nowhere://x")
    prompt = client.get_prompt("greet", {"name": "Bob"})
    assert prompt.messages[0].content.text == "Hello, Bob!"
    assert client.complete(prompt="greet", argument="name", value="A").values == ["Ada", "Alan"]

    # a subscription and its update; a list change
    client.subscribe("note://1")
    assert client.call_tool("touch").text == "touched"
    events["updated"].wait_until(lambda items: "note://1" in items)
    mark = events["changed"].mark()
    assert client.call_tool("add_tool", {"name": "shout"}).text == "shout"
    events["changed"].wait_until(lambda items: "tools" in items, since=mark)
    assert "shout" in [tool.name for tool in client.list_tools()]

    # cancellation reaches the target (which then adds a tool, so the client is told)
    started = threading.Event()
    call = client.start_tool_call("slow", on_progress=lambda *report: started.set())
    assert started.wait(WAIT)
    mark = events["changed"].mark()
    call.cancel("the user gave up")
    # the witness: the tool the target adds once cancelled changes its list (nothing else does now)
    events["changed"].wait_until(lambda items: "tools" in items, since=mark)
    if not (front_era == "modern" and back_era == "handshake"):
        # (there the target, which answers no cancelled request, may have been restarted after the
        # proxy's CANCEL_GRACE, its tools with it: the list change above is the witness)
        assert "slow_was_cancelled" in [tool.name for tool in client.list_tools()]


@pytest.mark.slow
@pytest.mark.parametrize("back_era", ["handshake", "modern", "both"])
@pytest.mark.parametrize("back_transport", ["stdio", "http"])
@pytest.mark.parametrize("front_transport", ["stdio", "http"])
@pytest.mark.parametrize("front_era", ["handshake", "modern"])
def test_every_feature_crosses_the_proxy(front_era, front_transport, back_transport, back_era):
    events = {"log": Collector(), "changed": Collector(), "updated": Collector()}
    processes = []
    try:
        if back_transport == "stdio":
            target = as_target(target_command(back_era))
        else:
            processes.append(start_target_http(back_era))
            target = processes[-1].url
        if front_transport == "stdio":
            front = proxy_command(target, "--stdio")
        else:
            processes.append(start_proxy_http(target))
            front = processes[-1].url
        with front_client(front_transport, front, front_era, events) as client:
            exercise(client, back_era, front_era, events)
    finally:
        for process in reversed(processes):
            process.stop()
