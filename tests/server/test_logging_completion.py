"""Logging (logging/setLevel filtering notifications/message) and completion/complete,
over real stdio.  Every message is validated against the negotiated revision's official schema.
"""

from __future__ import annotations

import json
import sys
from typing import Literal

import pytest
from conftest import SERVERS, WireChecker, client_pool
from servers.feature_logging import NUMBERS

from mcp_ref import SUPPORTED_VERSIONS, CapabilityError, InvalidParams
from mcp_ref.feature_types import Completion, LogMessage
from mcp_ref.server import LOG_LEVELS

SCRIPT = SERVERS / "feature_logging.py"
CITIES = "feature://cities/{country}/{city}"


pool = client_pool(
    [sys.executable, str(SCRIPT)]
)  # module-scoped fixtures; each test's messages must be schema-valid
bare_pool = client_pool([sys.executable, str(SCRIPT), "no-completions"])


# -- logging ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [SUPPORTED_VERSIONS[0], SUPPORTED_VERSIONS[-1]])
@pytest.mark.parametrize("level", ["debug", "info", "warning", "critical", "emergency"])
def test_set_level_filters_log_messages(pool, version, level):
    peer = pool.peer(version)
    peer.client.set_logging_level(level)
    mark = peer.logs.mark()
    sent = json.loads(peer.client.call_tool("emit").content[0].text)
    expected = list(LOG_LEVELS[LOG_LEVELS.index(level) :])
    assert sent == expected
    # Messages arrive in order and "emergency" always passes: once it is here, every other one is too.
    logs = peer.logs.wait_until(
        lambda items: any(m.level == "emergency" for m in items), since=mark
    )
    assert all(isinstance(m, LogMessage) for m in logs)
    assert [m.level for m in logs] == expected
    assert [(m.logger, m.data) for m in logs] == [
        ("feature", {"seq": LOG_LEVELS.index(level), "level": level}) for level in expected
    ]


@pytest.mark.slow
@pytest.mark.parametrize("version", [SUPPORTED_VERSIONS[0], SUPPORTED_VERSIONS[-1]])
@pytest.mark.parametrize("level", ["verbose", "WARNING", "", None, 3])
def test_invalid_level_is_invalid_params(raw_peer, version, level):
    # Sent raw: the client would not send a level the schema forbids.
    checker = WireChecker(version)
    peer = raw_peer([sys.executable, str(SCRIPT)])
    assert peer.initialize(version)["result"]["protocolVersion"] == version
    request = {"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel", "params": {"level": level}}
    peer.send_json(request)
    reply = peer.recv()
    assert reply["id"] == 7 and reply["error"]["code"] == -32602
    checker("<--", json.dumps(reply).encode())
    checker.assert_valid()
    # The connection is still fine, and a valid level is accepted.
    peer.send_json(
        {"jsonrpc": "2.0", "id": 8, "method": "logging/setLevel", "params": {"level": "error"}}
    )
    assert peer.recv() == {"jsonrpc": "2.0", "id": 8, "result": {}}


# -- completion -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_complete_prompt_argument(pool, version):
    completion = pool.client(version).complete(prompt="pick", argument="letter", value="c")
    assert isinstance(completion, Completion)
    assert completion.values == ["c"]
    assert not completion.has_more and completion.total is None


@pytest.mark.parametrize(
    "value, count, total", [("", 100, 250), ("1", 100, 111), ("24", 11, None), ("249", 1, None)]
)
def test_complete_returns_at_most_100_values(pool, value, count, total):
    peer = pool.peer()
    completion = peer.client.complete(prompt="pick", argument="number", value=value)
    matching = [n for n in NUMBERS if n.startswith(value)]
    assert completion.values == matching[:100] and len(completion.values) == count
    assert completion.total == total
    if total is None:
        assert not completion.has_more
        assert "hasMore" not in completion.raw or completion.raw["hasMore"] is False
    else:
        assert completion.has_more is True


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_complete_template_variables(pool, version):
    client = pool.client(version)
    assert client.complete(resource=CITIES, argument="country", value="f").values == ["fr"]
    assert client.complete(resource=CITIES, argument="city", value="b").values == ["Berlin", "Bonn"]


def test_complete_template_variable_with_context(pool):
    client = pool.client("2025-06-18")  # context.arguments came in 2025-06-18
    assert client.complete(
        resource=CITIES, argument="city", value="l", context={"country": "fr"}
    ).values == ["Lyon", "Lille"]
    assert (
        client.complete(
            resource=CITIES, argument="city", value="b", context={"country": "fr"}
        ).values
        == []
    )
    assert client.complete(
        resource=CITIES, argument="city", value="b", context={"country": "de"}
    ).values == ["Berlin", "Bonn"]


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize(
    "ref",
    [{"prompt": "no_such_prompt"}, {"resource": "feature://no/{such}"}],
    ids=["prompt", "template"],
)
def test_complete_unknown_reference_is_invalid_params(pool, version, ref):
    with pytest.raises(InvalidParams) as caught:
        pool.client(version).complete(argument="x", value="", **ref)
    assert caught.value.code == -32602


def test_a_reference_type_that_is_not_a_string_is_invalid_params(raw_peer):
    """2025-11-25 server/utilities/completion §Error Handling: invalid params are -32602 (a
    ``ref.type`` that was a list or an object was an internal error: it was looked up as a key),
    and the connection goes on."""
    version = "2025-11-25"
    peer = raw_peer([sys.executable, str(SCRIPT)])
    assert peer.initialize(version)["result"]["protocolVersion"] == version
    argument = {"name": "city", "value": "b"}
    for number, ref_type in enumerate((["ref/resource"], {"type": "ref/resource"}, 7, None)):
        params = {"ref": {"type": ref_type, "uri": CITIES}, "argument": argument}
        peer.send_json(
            {"jsonrpc": "2.0", "id": number, "method": "completion/complete", "params": params}
        )
        reply = peer.recv()
        assert reply["error"]["code"] == -32602, reply
        assert reply["error"]["message"] == f"Invalid params: unknown reference type {ref_type!r}"
    good = {"ref": {"type": "ref/resource", "uri": CITIES}, "argument": argument}
    good["context"] = {"arguments": {"country": "de"}}
    peer.send_json({"jsonrpc": "2.0", "id": 9, "method": "completion/complete", "params": good})
    assert peer.recv()["result"]["completion"]["values"] == ["Berlin", "Bonn"]


@pytest.mark.parametrize(
    "ref, argument",
    [({"prompt": "pick"}, "colour"), ({"resource": CITIES}, "street"), ({"prompt": "pick"}, "")],
)
def test_completing_an_argument_the_item_does_not_have_is_invalid_params(pool, ref, argument):
    """2025-11-25 server/utilities/completion §Security: "MUST: Validate all completion inputs": an
    argument name the prompt or template does not have is -32602; its function is never asked."""
    client = pool.client()
    with pytest.raises(InvalidParams) as caught:
        client.complete(argument=argument, value="b", **ref)
    assert caught.value.code == -32602
    assert client.complete(resource=CITIES, argument="country", value="f").values == ["fr"]


def test_a_literal_template_variable_offers_its_choices_unless_a_function_answers():
    from conftest import WAIT

    from mcp_ref import Client, Server

    server = Server("choices")

    @server.resource("sizes://{size}/{name}")
    def sized(size: Literal["small", "large", 3], name: str) -> str:
        return f"{name} ({size})"

    @server.prompt()
    def answered(mode: Literal["a", "b"]) -> str:
        return mode

    @server.completion(prompt="answered")
    def complete_answered(argument: str, value: str, context: dict) -> list[str]:
        return ["from the function"]

    with Client.in_memory(server, timeout=WAIT) as client:
        assert "completions" in client.server_capabilities
        template = "sizes://{size}/{name}"
        assert client.complete(resource=template, argument="size", value="").values == [
            "small",
            "large",
            "3",
        ]
        assert client.complete(resource=template, argument="size", value="s").values == ["small"]
        assert client.complete(resource=template, argument="name", value="").values == []
        answered_values = client.complete(prompt="answered", argument="mode", value="").values
        assert answered_values == ["from the function"]
        assert client.read_resource("sizes://3/box").contents[0].text == "box (3)"


#: ``"context": null`` sent (None in the table below: no context sent at all).
NULL_CONTEXT = "context: null"


@pytest.mark.parametrize(
    "argument, completion_context",
    [
        ({"name": "city"}, None),
        ({"name": "city", "value": 5}, None),
        ({"name": "city", "value": None}, None),
        ({"name": "city", "value": ["b"]}, None),
        ({"name": "city", "value": "b"}, {"arguments": {"country": 5}}),
        ({"name": "city", "value": "b"}, {"arguments": {"country": None}}),
        ({"name": "city", "value": "b"}, {"arguments": {"country": {"code": "de"}}}),
        ({"name": "city", "value": "b"}, {"arguments": "country=de"}),
        ({"name": "city", "value": "b"}, []),
        ({"name": "city", "value": "b"}, {"arguments": []}),
        ({"name": "city", "value": "b"}, {"arguments": 0}),
        ({"name": "city", "value": "b"}, {"arguments": False}),
        ({"name": "city", "value": "b"}, {"arguments": ""}),
        ({"name": "city", "value": "b"}, {"arguments": None}),
        ({"name": "city", "value": "b"}, NULL_CONTEXT),
    ],
)
def test_a_completion_value_or_context_argument_that_is_not_a_string_is_invalid_params(
    raw_peer, argument, completion_context
):
    """2025-11-25 server/utilities/completion §Security: implementations "MUST: Validate all
    completion inputs" (the schema's ``argument.value`` is a string, ``context.arguments`` an
    object of strings); §Error Handling: -32602.  Nothing reaches the completion function (it
    was handed the Python text of a number, ``"5"``), and the connection goes on.  A ``context``
    or ``arguments`` defaults to empty only when absent: ``[]``, ``0``, ``false``, ``""`` or null
    is refused, not read as "no arguments"."""
    version = "2025-11-25"
    peer = raw_peer([sys.executable, str(SCRIPT)])
    assert peer.initialize(version)["result"]["protocolVersion"] == version
    params = {"ref": {"type": "ref/resource", "uri": CITIES}, "argument": argument}
    if completion_context is NULL_CONTEXT:
        params["context"] = None
    elif completion_context is not None:
        params["context"] = completion_context
    peer.send_json({"jsonrpc": "2.0", "id": 7, "method": "completion/complete", "params": params})
    reply = peer.recv()
    assert reply["id"] == 7 and reply["error"]["code"] == -32602, reply
    WireChecker(version)("<--", json.dumps(reply).encode())
    good = {**params, "argument": {"name": "city", "value": "b"}}
    good["context"] = {"arguments": {"country": "de"}}
    peer.send_json({"jsonrpc": "2.0", "id": 8, "method": "completion/complete", "params": good})
    assert peer.recv()["result"]["completion"]["values"] == ["Berlin", "Bonn"]


@pytest.mark.parametrize("version", [v for v in SUPPORTED_VERSIONS if v >= "2025-03-26"])
def test_server_without_completions_raises_capability_error(bare_pool, version):
    peer = bare_pool.peer(version)
    assert "completions" not in peer.client.server_capabilities
    assert (
        "prompts" in peer.client.server_capabilities
    )  # the prompt is there, its completion is not
    with pytest.raises(CapabilityError):
        peer.client.complete(prompt="pick", argument="number", value="1")
    with pytest.raises(CapabilityError):
        peer.client.complete(resource=CITIES, argument="city", value="b")
    assert peer.wire.sent("completion/complete") == []  # refused before anything was sent


def test_completions_capability_is_declared_from_2025_03_26(pool):
    for version in SUPPORTED_VERSIONS:
        caps = pool.client(version).server_capabilities
        assert ("completions" in caps) == (version >= "2025-03-26"), version


def test_no_completion_handler_at_2024_11_05_gives_no_values(bare_pool):
    # 2024-11-05 had completion/complete but no capability to announce it: the request is sent and answered empty.
    peer = bare_pool.peer("2024-11-05")
    assert peer.client.complete(prompt="pick", argument="number", value="1").values == []
    assert len(peer.wire.sent("completion/complete")) == 1


# -- behaviour spec_notes listed as untested ------------------------------------------------------

UNTESTED = [sys.executable, str(SERVERS / "untested_server.py")]


@pytest.mark.slow
@pytest.mark.parametrize("version", [v for v in SUPPORTED_VERSIONS if v >= "2025-03-26"])
def test_server_without_completions_answers_method_not_found(raw_peer, version):
    # Sent raw: the client refuses to send it (test_server_without_completions_raises_capability_error).
    checker = WireChecker(version)
    peer = raw_peer(UNTESTED)
    reply = peer.initialize(version)
    assert "completions" not in reply["result"]["capabilities"]
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "completion/complete",
            "params": {
                "ref": {"type": "ref/resource", "uri": "untested://x/{y}"},
                "argument": {"name": "y", "value": ""},
            },
        }
    )
    answer = peer.recv()
    assert answer["id"] == 5 and answer["error"]["code"] == -32601, answer
    checker("<--", json.dumps(answer).encode())
    checker.assert_valid()


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_completion_context_is_sent_only_from_2025_06_18(pool, version):
    peer = pool.peer(version)
    values = peer.client.complete(
        resource=CITIES, argument="city", value="b", context={"country": "fr"}
    ).values
    sent = peer.wire.sent("completion/complete")[-1]["params"]
    if version >= "2025-06-18":
        assert sent["context"] == {"arguments": {"country": "fr"}}
        assert values == []  # no French city starts with b
    else:
        assert "context" not in sent  # CompleteRequest has no context at this revision
        assert values == ["Berlin", "Bonn"]


# -- spec_notes items ------------------------------------------------------------------------------

NOTES_SERVER = [sys.executable, str(SERVERS / "notes_server.py")]


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_log_messages_are_sent_before_notifications_initialized(raw_peer, version):
    # basic/lifecycle: before notifications/initialized the server "SHOULD NOT send requests other
    # than pings and logging".  mcp_ref logs from handlers, so a raw client calls a tool that logs
    # after the initialize answer but without ever sending notifications/initialized.
    checker = WireChecker(version)
    peer = raw_peer(NOTES_SERVER)
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
    )
    assert peer.recv()["result"]["protocolVersion"] == version
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "log_one"}}
    peer.send_json(call)
    log, answer = peer.recv(), peer.recv()
    assert log == {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": {"note": "hello"}, "logger": "notes"},
    }
    assert answer["id"] == 1 and answer["result"]["content"] == [{"type": "text", "text": "logged"}]
    checker("-->", json.dumps(call).encode())
    for message in (log, answer):
        checker("<--", json.dumps(message).encode())
    checker.assert_valid()


# -- logs arrive by default (issue 23 item 4) -------------------------------------------------------


def emitted(era: str, **options) -> tuple[list, list]:
    """What ``emit`` sent, and what on_log received, for a fresh stdio client of ``era``."""
    import queue

    from conftest import WAIT

    from mcp_ref import Client

    logs: queue.Queue = queue.Queue()
    with Client.stdio([sys.executable, str(SCRIPT)], era=era, on_log=logs.put, **options) as client:
        sent = json.loads(client.call_tool("emit").content[0].text)
        received = [logs.get(timeout=WAIT).level for _ in sent]  # in order, each sent one arrives
    return sent, received


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_on_log_gets_info_and_above_by_default_in_both_eras(era):
    sent, received = emitted(era)
    assert sent == received == list(LOG_LEVELS[LOG_LEVELS.index("info") :])


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_log_level_chooses_the_default_and_none_asks_nothing(era):
    assert emitted(era, log_level="debug")[0] == list(LOG_LEVELS)
    assert emitted(era, log_level="error")[0] == list(LOG_LEVELS[LOG_LEVELS.index("error") :])
    # Nothing asked: a 2026-07-28 server sends nothing, a handshake-era one (mcp_ref) everything.
    assert emitted(era, log_level=None)[0] == ([] if era == "modern" else list(LOG_LEVELS))


@pytest.mark.slow
def test_a_bad_default_level_is_refused_at_once():
    from mcp_ref import Client

    with pytest.raises(ValueError, match="log_level must be one of"):
        Client.stdio([sys.executable, str(SCRIPT)], era="modern", on_log=print, log_level="verbose")


@pytest.mark.slow
def test_set_level_over_stateless_http_is_refused_with_the_reason(caplog):
    import queue
    import threading

    import requests
    from conftest import WAIT
    from servers.feature_logging import build

    from mcp_ref import Client

    server = build(completions=False)
    httpd = server.http_server("127.0.0.1", 0, stateless=True)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        url = f"{httpd.url}/mcp"
        version = "2025-11-25"
        reply = requests.post(
            url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "logging/setLevel",
                "params": {"level": "error"},
            },
            headers={
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": version,
            },
            timeout=WAIT,
        )
        error = reply.json()["error"]
        assert (
            error["code"] == -32600
            and "stateless HTTP" in error["message"]
            and "2026-07-28" in error["message"]
        )
        # A client with on_log still connects (the refusal is logged), and each call's logs reach it.
        logs: queue.Queue = queue.Queue()
        with (
            caplog.at_level("WARNING", logger="mcp_ref.client.logs"),
            Client.http(url, era="handshake", on_log=logs.put) as client,
        ):
            sent = json.loads(client.call_tool("emit").content[0].text)
            assert sent == list(LOG_LEVELS)  # the server's own default: every level
            assert [logs.get(timeout=WAIT).level for _ in sent] == sent
        assert any("refused log level 'info'" in r.getMessage() for r in caplog.records)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)
        httpd.app.close()
