"""Client features over real stdio: sampling, roots, elicitation, notification callbacks,
and the result dataclasses.  Each test starts its own server (the client options are the
subject); every message is validated against the negotiated revision's official schema.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import unicodedata

import pytest
from conftest import SERVERS, WAIT, Collector, InMemory, handshake_era
from servers.feature_client import ELICIT_SCHEMA
from servers.untested_server import NAME_SCHEMA, WEATHER_TOOL

from mcp_ref import (
    SUPPORTED_VERSIONS,
    CapabilityError,
    Client,
    Context,
    RequestCancelled,
    Server,
)
from mcp_ref.feature_types import GetPromptResult, LogMessage, ReadResourceResult, Root
from mcp_ref.sampling_and_elicitation import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    SamplingMessage,
)
from mcp_ref.types import CallToolResult, TextContent, Tool


@pytest.fixture
def connect(connect):
    """This module tests the handshake era's server-to-client requests on the wire; the 2026-07-28
    era answers the same asks as input_required rounds (test_modern_client.py)."""
    return handshake_era(connect)


CLIENT = InMemory("feature_client")  # no subprocess needed: the server runs in the test process
ELICITING = [v for v in SUPPORTED_VERSIONS if v >= "2025-06-18"]
PRE_ELICITATION = [v for v in SUPPORTED_VERSIONS if v < "2025-06-18"]


def sent_capabilities(wire) -> dict:
    return wire.sent("initialize")[0]["params"]["capabilities"]


def reply_to(wire, method: str) -> dict:
    """The result this client sent for the (last) request ``method`` the server made."""
    request = wire.received(method)[-1]
    return next(m for m in wire.sent() if "result" in m and m.get("id") == request["id"])["result"]


# -- sampling ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize("as_dict", [False, True], ids=["object", "dict"])
def test_sampling_handler_gets_params_and_its_result_reaches_the_tool(
    connect, wire, version, as_dict
):
    seen: list = []

    def handler(params):
        seen.append(params)
        result = CreateMessageResult(
            role="assistant",
            content=TextContent(text="forty-two"),
            model="test-model",
            stop_reason="endTurn",
        )
        return result.to_wire() if as_dict else result

    client = connect(CLIENT, protocol_version=version, sampling_handler=handler)
    assert sent_capabilities(wire)["sampling"] == {}
    result = client.call_tool("sample", {"question": "The meaning?"})
    assert json.loads(result.content[0].text) == {
        "type": "CreateMessageResult",
        "role": "assistant",
        "model": "test-model",
        "stop_reason": "endTurn",
        "content_type": "TextContent",
        "text": "forty-two",
    }
    (params,) = seen
    assert isinstance(params, CreateMessageParams)
    assert isinstance(params.messages[0], SamplingMessage) and params.messages[0].role == "user"
    assert (
        isinstance(params.messages[0].content, TextContent)
        and params.messages[0].content.text == "The meaning?"
    )
    assert (params.max_tokens, params.system_prompt, params.temperature, params.stop_sequences) == (
        64,
        "Be brief.",
        0.25,
        ["STOP"],
    )
    assert params.model_preferences == {"hints": [{"name": "small"}], "speedPriority": 0.75}
    assert (params.include_context, params.metadata) == ("none", {"trace": "t-1"})
    assert params.raw == wire.received("sampling/createMessage")[0]["params"]


def test_sampling_without_a_handler_is_a_capability_error_in_the_server(connect, wire):
    client = connect(CLIENT)
    assert "sampling" not in sent_capabilities(wire)
    assert (
        client.call_tool("sample", {"question": "?"}).content[0].text.startswith("CapabilityError")
    )
    assert wire.received("sampling/createMessage") == []


# -- roots -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_roots_are_listed_and_changes_reach_the_server(connect, wire, version):
    client = connect(
        CLIENT,
        protocol_version=version,
        roots=[Root(uri="file:///work/a", name="A"), "file:///work/b"],
    )
    assert sent_capabilities(wire)["roots"] == {"listChanged": True}
    assert json.loads(client.call_tool("roots").content[0].text) == [
        {"uri": "file:///work/a", "name": "A"},
        {"uri": "file:///work/b", "name": None},
    ]

    client.set_roots([{"uri": "file:///work/c", "name": "C"}])
    assert len(wire.sent("notifications/roots/list_changed")) == 1
    # The tool waits (bounded) in the server for Server.on_roots_list_changed to have run.
    changes = json.loads(client.call_tool("roots_changed", {"at_least": 1}).content[0].text)
    assert changes == {"count": 1, "roots": [{"uri": "file:///work/c", "name": "C"}]}

    client.set_roots(["file:///work/d"])
    changes = json.loads(client.call_tool("roots_changed", {"at_least": 2}).content[0].text)
    assert changes == {"count": 2, "roots": [{"uri": "file:///work/d"}]}
    assert json.loads(client.call_tool("roots").content[0].text) == [
        {"uri": "file:///work/d", "name": None}
    ]
    assert client.roots == [Root(uri="file:///work/d")]


def test_without_roots_there_is_no_capability(connect, wire):
    client = connect(CLIENT)
    assert "roots" not in sent_capabilities(wire)
    with pytest.raises(CapabilityError):
        client.set_roots(["file:///x"])
    assert wire.sent("notifications/roots/list_changed") == []
    assert client.call_tool("roots").is_error is True  # the server may not ask for them
    assert wire.received("roots/list") == []


# -- elicitation --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ELICITING)
@pytest.mark.parametrize(
    "answer, expected",
    [
        (
            {"action": "accept", "content": {"name": "Ada"}},
            {
                "action": "accept",
                "content": {"name": "Ada", "age": 30, "colour": "blue", "subscribed": True},
            },
        ),
        (
            ElicitResult(
                action="accept", content={"name": "Bo", "colour": "red", "subscribed": False}
            ),
            {
                "action": "accept",
                "content": {"name": "Bo", "age": 30, "colour": "red", "subscribed": False},
            },
        ),
        ({"action": "decline"}, {"action": "decline", "content": None}),
        (ElicitResult(action="cancel"), {"action": "cancel", "content": None}),
    ],
    ids=["defaults-filled", "user-values-kept", "decline", "cancel"],
)
def test_form_elicitation(connect, wire, version, answer, expected):
    seen: list = []

    def handler(params):
        seen.append(params)
        return answer

    client = connect(CLIENT, protocol_version=version, elicitation_handler=handler)
    assert sent_capabilities(wire)["elicitation"] == (
        {"form": {}} if version >= "2025-11-25" else {}
    )
    assert json.loads(client.call_tool("ask").content[0].text) == expected
    (params,) = seen
    assert isinstance(params, ElicitParams)
    assert (params.message, params.requested_schema) == ("Who are you?", ELICIT_SCHEMA)
    assert params.mode == ("form" if version >= "2025-11-25" else None)
    # The defaults were applied by the client, on the wire (SEP-1034).
    assert reply_to(wire, "elicitation/create") == {
        k: v for k, v in expected.items() if v is not None
    }


@pytest.mark.parametrize("version", PRE_ELICITATION)
def test_eliciting_before_2025_06_18_is_a_capability_error(connect, wire, version):
    seen: list = []
    client = connect(
        CLIENT,
        protocol_version=version,
        elicitation_handler=lambda p: seen.append(p) or {"action": "cancel"},
    )
    assert "elicitation" not in sent_capabilities(wire)  # it does not exist at this revision
    text = client.call_tool("ask").content[0].text
    assert text.startswith("CapabilityError") and version in text
    assert seen == [] and wire.received("elicitation/create") == []


# -- notification callbacks ----------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_callbacks_for_log_progress_updates_and_list_changed(connect, wire, version):
    logs, updates, changes, progress = Collector(), Collector(), Collector(), Collector()
    client = connect(
        CLIENT,
        protocol_version=version,
        on_log=logs,
        on_resource_updated=updates,
        on_list_changed=changes,
    )
    client.subscribe("feature://watched")
    result = client.call_tool("notify_all", on_progress=progress)
    assert result.content[0].text == "notified"
    # Progress is delivered before the result it belongs to.
    message = (lambda step: f"step {step}") if version >= "2025-03-26" else (lambda step: None)
    assert progress.items == [(step, 3, message(step)) for step in (1, 2, 3)]

    (log,) = logs.wait_for(1)
    assert isinstance(log, LogMessage)
    assert (log.level, log.data, log.logger) == ("info", {"hello": "log"}, "feature-client")
    assert updates.wait_for(1) == ["feature://watched"]
    assert changes.wait_for(3) == ["tools", "resources", "prompts"]
    assert "late_tool" in [t.name for t in client.list_tools()]


# -- results are dataclasses --------------------------------------------------------------------------


def test_results_are_dataclasses_with_raw(connect):
    client = connect(CLIENT)
    result = client.call_tool("structured", {"city": "Oslo"})
    assert isinstance(result, CallToolResult) and dataclasses.is_dataclass(result)
    assert isinstance(result.content[0], TextContent)
    assert json.loads(result.content[0].text) == {"city": "Oslo", "sky": "clear"}
    assert not result.is_error
    assert result.structured_content == {"city": "Oslo", "sky": "clear"}
    assert result.raw["structuredContent"] == {"city": "Oslo", "sky": "clear"}

    assert client.call_tool("text_blocks").text == "one\ntwo"

    tools = client.list_tools()
    assert all(isinstance(t, Tool) and t.raw["name"] == t.name for t in tools)
    assert isinstance(client.read_resource("feature://watched"), ReadResourceResult)
    assert isinstance(client.get_prompt("hello"), GetPromptResult)


def test_raw_keeps_unknown_keys(connect, wire):
    client = connect(CLIENT)
    result = client.call_tool("extra_keys")
    assert result.raw == wire.received()[-1]["result"]
    assert result.raw["x-vendor"] == {"kept": True}
    assert result.content[0].text == "with extras"
    assert result.content[0].raw["x-block"] == 1
    assert result.is_error is False and result.raw["isError"] is False
    wire_form = result.to_wire()
    assert wire_form["x-vendor"] == {"kept": True} and wire_form["content"][0]["x-block"] == 1


# -- behaviour spec_notes listed as untested ------------------------------------------------------

UNTESTED = InMemory("untested_server", "full")
RAW_SERVER = [sys.executable, str(SERVERS / "untested_raw_server.py")]


def sent_anyway(client, method: str, params: dict | None = None) -> dict:
    """Have the server send ``method`` to this client, past every capability check; its answer."""
    arguments = {"method": method} if params is None else {"method": method, "params": params}
    return json.loads(client.call_tool("raw_request", arguments).content[0].text)


def test_sampling_with_tools(connect, wire):
    seen: list = []

    def handler(params):
        seen.append(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "sunny"},
            "model": "tool-model",
        }

    client = connect(UNTESTED, sampling_handler=handler, sampling_tools=True)
    assert sent_capabilities(wire)["sampling"] == {"tools": {}}
    assert client.call_tool("sample_with_tools").content[0].text == "tool-model: sunny"
    (params,) = seen
    assert params.tools == [WEATHER_TOOL] and params.tool_choice == {"mode": "auto"}
    assert wire.received("sampling/createMessage")[0]["params"]["tools"] == [WEATHER_TOOL]


def test_sampling_tools_is_declared_only_from_2025_11_25(connect, wire):
    connect(
        UNTESTED,
        protocol_version="2025-06-18",
        sampling_tools=True,
        sampling_handler=lambda params: None,
    )
    assert sent_capabilities(wire)["sampling"] == {}


def test_sampling_with_tools_needs_the_clients_sampling_tools(connect, wire):
    seen: list = []
    client = connect(
        UNTESTED,
        sampling_handler=lambda params: (
            seen.append(params)
            or {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}
        ),
    )
    assert sent_capabilities(wire)["sampling"] == {}
    # The server refuses to send it ...
    text = client.call_tool("sample_with_tools").content[0].text
    assert text.startswith("CapabilityError") and "sampling.tools" in text
    assert wire.received("sampling/createMessage") == []
    # ... and sent anyway, the client answers -32602 without calling its handler.
    message = {"role": "user", "content": {"type": "text", "text": "Weather?"}}
    assert (
        sent_anyway(
            client,
            "sampling/createMessage",
            {"messages": [message], "maxTokens": 5, "tools": [WEATHER_TOOL]},
        )["error"]
        == -32602
    )
    assert (
        sent_anyway(
            client,
            "sampling/createMessage",
            {"messages": [message], "maxTokens": 5, "toolChoice": {"mode": "none"}},
        )["error"]
        == -32602
    )
    assert seen == []
    assert "result" in sent_anyway(
        client, "sampling/createMessage", {"messages": [message], "maxTokens": 5}
    )
    assert len(seen) == 1


def test_url_elicitation_end_to_end(connect, wire):
    seen: list = []
    completed = Collector()

    def handler(params):
        seen.append(params)
        return {"action": "accept"}

    client = connect(
        UNTESTED,
        elicitation_handler=handler,
        elicitation_modes=("form", "url"),
        on_elicitation_complete=completed,
    )
    assert sent_capabilities(wire)["elicitation"] == {"form": {}, "url": {}}
    arguments = {"url": "https://example.com/login", "elicitation_id": "el-1"}
    assert client.call_tool("elicit_url", arguments).content[0].text == "accept"
    (params,) = seen
    assert isinstance(params, ElicitParams)
    assert (params.mode, params.message, params.url, params.elicitation_id) == (
        "url",
        "Please sign in",
        "https://example.com/login",
        "el-1",
    )
    assert params.requested_schema is None
    # notifications/elicitation/complete reaches the callback (on the callback thread).
    assert completed.wait_for(1) == ["el-1"]
    assert [n["params"] for n in wire.received("notifications/elicitation/complete")] == [
        {"elicitationId": "el-1"}
    ]


def test_a_form_only_client_refuses_url_elicitation(connect, wire):
    seen: list = []
    client = connect(
        UNTESTED, elicitation_handler=lambda params: seen.append(params) or {"action": "accept"}
    )
    assert sent_capabilities(wire)["elicitation"] == {"form": {}}
    text = (
        client.call_tool("elicit_url", {"url": "https://example.com", "elicitation_id": "e"})
        .content[0]
        .text
    )
    assert text.startswith("CapabilityError") and "URL-mode" in text
    assert wire.received("elicitation/create") == []
    # Sent anyway: -32602, and the user is not asked.
    params = {"mode": "url", "message": "m", "url": "https://example.com", "elicitationId": "e"}
    assert sent_anyway(client, "elicitation/create", params)["error"] == -32602
    assert seen == []


UNTESTED_STDIO = [sys.executable, str(SERVERS / "untested_server.py")]
#: Characters that show nothing, so hide part of a URL from the user who must examine it: the
#: Arabic letter mark (a bidi control), the word joiner, an invisible operator, the zero-width
#: no-break space, the soft hyphen, the Mongolian vowel separator, an ideographic space.
INVISIBLE = ["\u061c", "\u2060", "\u2064", "\ufeff", "\u00ad", "\u180e", "\u3000"]
A_GOOD_URL_ASK = {
    "mode": "url",
    "message": "m",
    "url": "https://example.com/x",
    "elicitationId": "e",
}


@pytest.mark.parametrize(
    ("version", "params", "refusal"),
    [
        (
            "2025-11-25",
            {"message": "m", "mode": "url", "url": "https://example.com/x"},
            "a URL-mode elicitation needs an elicitationId, a string",
        ),
        (
            "2025-11-25",
            {"message": "m", "mode": "url", "url": "https://example.com/x", "elicitationId": 7},
            "a URL-mode elicitation needs an elicitationId, a string",
        ),
        (
            "2025-06-18",
            A_GOOD_URL_ASK,
            "URL-mode elicitation does not exist in protocol version 2025-06-18",
        ),
    ],
    ids=["2025-11-25-no-elicitationId", "2025-11-25-number-elicitationId", "2025-06-18-url-mode"],
)
def test_a_url_mode_elicitation_the_revision_does_not_allow_is_refused(
    connect, wire, version, params, refusal
):
    # 2025-11-25 schema ElicitRequestURLParams: "required": ["elicitationId", "message", "mode",
    # "url"] (client/elicitation §URL Mode Elicitation Requests: they "MUST specify mode: "url", a
    # message, and include these additional parameters: url, elicitationId").  2025-06-18 has no
    # URL mode: its ElicitRequest params are a message and a requestedSchema.  (2026-07-28 removed
    # elicitationId: test_modern_client.py asks without one.)  The user is never asked.
    seen: list = []
    client = connect(
        UNTESTED_STDIO,
        protocol_version=version,
        elicitation_handler=lambda p: seen.append(p) or {"action": "decline"},
        elicitation_modes=("form", "url"),
    )
    answer = sent_anyway(client, "elicitation/create", params)
    assert answer == {"error": -32602, "message": f"Invalid params: {refusal}"}
    assert seen == []
    if version == "2025-11-25":
        assert sent_anyway(client, "elicitation/create", A_GOOD_URL_ASK) == {
            "result": {"action": "decline"}
        }
        assert [p.elicitation_id for p in seen] == ["e"]
    assert all(error.startswith("ElicitRequest") for error in wire.errors), wire.errors
    wire.errors.clear()


@pytest.mark.parametrize(
    "params",
    [
        {"message": "m", "requestedSchema": ["x"]},
        {"message": "m", "requestedSchema": {"type": "object", "properties": ["a"]}},
        {"message": {"x": 1}, "requestedSchema": {"type": "object", "properties": {}}},
        {"requestedSchema": {"type": "object", "properties": {}}},
        {"message": "m", "mode": "url", "elicitationId": "e"},
        {"message": "m", "mode": "url", "url": 5, "elicitationId": "e"},
        {"message": "m", "mode": "url", "url": "javascript:alert(1)", "elicitationId": "e"},
        {"message": "m", "mode": "url", "url": "file:///etc/passwd", "elicitationId": "e"},
        {"message": "m", "mode": "url", "url": "https://", "elicitationId": "e"},
        {"message": "m", "mode": "url", "url": "https://a.example:99999/", "elicitationId": "e"},
        {"message": "m", "mode": "url", "url": "https://a.example/ x", "elicitationId": "e"},
        {
            "message": "m",
            "mode": "url",
            "url": "https://a.example/\u202egnp.exe",
            "elicitationId": "e",
        },
        *(
            {"message": "m", "mode": "url", "url": f"https://bank.example{c}.evil.example/"}
            | {"elicitationId": "e"}
            for c in INVISIBLE
        ),
    ],
    ids=[
        "schema-array",
        "properties-array",
        "message-object",
        "no-message",
        "url-mode-without-url",
        "url-number",
        "javascript-url",
        "file-url",
        "url-without-host",
        "url-port-out-of-range",
        "url-with-space",
        "url-with-bidi-override",
        *(f"url-with-U+{ord(c):04X}" for c in INVISIBLE),
    ],
)
def test_malformed_elicitation_params_are_invalid_params(connect, wire, caplog, params):
    # 2025-11-25 client/elicitation: message is a string, requestedSchema an object (properties an
    # object); "The url parameter MUST contain a valid URL".  Refused before the user is asked.
    seen: list = []
    client = connect(
        UNTESTED_STDIO,
        elicitation_handler=lambda p: seen.append(p) or {"action": "decline"},
        elicitation_modes=("form", "url"),
    )
    with caplog.at_level("DEBUG", logger="mcp_ref"):
        answer = sent_anyway(client, "elicitation/create", params)
    assert answer["error"] == -32602 and answer["message"].startswith("Invalid params: ")
    assert seen == []  # the handler never ran
    assert not [record for record in caplog.records if record.exc_info]  # no traceback logged
    assert sent_anyway(client, "elicitation/create", A_GOOD_URL_ASK) == {
        "result": {"action": "decline"}
    }
    assert [p.url for p in seen] == ["https://example.com/x"]
    # The request the server sent on purpose may break the schema; nothing else may.
    assert all(error.startswith("ElicitRequest") for error in wire.errors), wire.errors
    wire.errors.clear()


def test_no_url_with_a_control_format_separator_or_space_character_is_a_web_url():
    # 2025-11-25 client/elicitation §Safe URL Handling: the client "MUST show the full URL to the
    # user for examination before consent".  Every such character Unicode has, by its category.
    from mcp_ref.client.answering import is_web_url

    refused = {"Cc", "Cf", "Zl", "Zp", "Zs"}
    hiding = [chr(n) for n in range(0x110000) if unicodedata.category(chr(n)) in refused]
    assert len(hiding) > 200  # the test sees them all
    assert [c for c in hiding if is_web_url(f"https://a.example/{c}x")] == []
    assert is_web_url("https://a.example/é/日本")  # letters of any script are not refused
    assert not is_web_url("https://a.example\\@evil.example/")


@pytest.mark.parametrize(
    "blank", ["\u034f", "\u115f", "\u17b4", "\u180b", "\u2800", "\u3164", "\ufe0f", "\uffa0"]
)
def test_no_url_with_a_character_that_shows_as_nothing_is_a_web_url(blank):
    # Unicode's Default_Ignorable_Code_Point outside Cf (a combining grapheme joiner, Hangul
    # fillers, a variation selector ...) and the blank Braille pattern show as nothing: forty of
    # them push the real host out of view.
    from mcp_ref.client.answering import is_web_url

    assert not is_web_url(f"https://accounts.example.com{blank * 40}.evil.example/login")


#: A form of every restricted primitive type (2025-11-25 client/elicitation §Requested Schema).
EVERY_TYPE_FORM = {
    "message": "m",
    "mode": "form",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "score": {"type": "number"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        },
    },
}
GOOD_FORM_ANSWER = {
    "action": "accept",
    # (a number of the form may be a fraction; the schema's ElicitResult content, though, lists
    # no "number" type for a value: 2 is valid for both)
    "content": {"name": "hunter2", "age": 3, "score": 2, "ok": True, "tags": ["a"]},
}


@pytest.mark.parametrize(
    ("params", "answer", "problem"),
    [
        (EVERY_TYPE_FORM, {"action": "ACCEPT"}, "its action is 'ACCEPT'"),
        (EVERY_TYPE_FORM, {"content": {"name": "hunter2"}}, "its action is None"),
        (EVERY_TYPE_FORM, {"action": "decline", "content": {"name": "hunter2"}}, "has content"),
        (EVERY_TYPE_FORM, {"action": "cancel", "content": {}}, "has content"),
        (A_GOOD_URL_ASK, {"action": "accept", "content": {"name": "hunter2"}}, "has content"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": ["hunter2"]}, "not an object"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": {"name": 7}}, "'name' is not a string"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": {"age": "3"}}, "'age' is not an integer"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": {"age": 2.5}}, "'age' is not an integer"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": {"score": True}}, "'score' is not a num"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": {"ok": "yes"}}, "'ok' is not a boolean"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": {"tags": "a"}}, "'tags' is not a list"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": {"tags": [1]}}, "'tags' is not a list"),
        (EVERY_TYPE_FORM, {"action": "accept", "content": {"x": {"a": 1}}}, "'x' is not a string"),
    ],
    ids=[
        "unknown-action",
        "no-action",
        "decline-with-content",
        "cancel-with-content",
        "url-accept-with-content",
        "content-not-an-object",
        "string-as-number",
        "integer-as-string",
        "integer-as-fraction",
        "number-as-boolean",
        "boolean-as-string",
        "array-as-string",
        "array-of-numbers",
        "undeclared-object",
    ],
)
def test_an_elicitation_handlers_malformed_answer_is_a_local_error(
    connect, wire, caplog, params, answer, problem
):
    # 2025-11-25 client/elicitation §Response Actions: the action is "accept", "decline" or
    # "cancel" (the schema's enum); only an accepted form has content, "the submitted data
    # matching the requested schema" (its restricted primitive types).  The handler's mistake is
    # logged here; the server is told -32603 with the generic message, nothing of the answer.
    answers = [answer, GOOD_FORM_ANSWER]
    client = connect(
        UNTESTED_STDIO,
        elicitation_handler=lambda params: answers.pop(0),
        elicitation_modes=("form", "url"),
    )
    with caplog.at_level("ERROR", logger="mcp_ref"):
        refused = sent_anyway(client, "elicitation/create", params)
    assert refused == {"error": -32603, "message": "Internal error"}
    (logged,) = [r for r in caplog.records if "elicitation/create" in r.getMessage()]
    assert logged.exc_info is not None and problem in str(logged.exc_info[1])
    assert "hunter2" not in caplog.text
    assert not [m for m in wire.sent() if "result" in m and "hunter2" in json.dumps(m)]
    # The connection goes on: a good answer is sent as it is.
    assert sent_anyway(client, "elicitation/create", EVERY_TYPE_FORM) == {
        "result": GOOD_FORM_ANSWER
    }


def test_a_default_of_the_wrong_type_is_not_filled_in_for_the_handler(connect, wire):
    # 2025-11-25 client/elicitation (SEP-1034): a field left unset takes its schema's default;
    # a default that is no value of its property's type is the server's mistake, not filled in
    # (the handler's good answer is not blamed for it), and one that fits is.
    params = {
        "message": "m",
        "mode": "form",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "default": "five"},
                "m": {"type": "integer", "default": 5},
            },
        },
    }
    client = connect(
        UNTESTED_STDIO, elicitation_handler=lambda params: {"action": "accept", "content": {}}
    )
    answer = sent_anyway(client, "elicitation/create", params)
    assert answer == {"result": {"action": "accept", "content": {"m": 5}}}
    assert [error.split(":")[0] for error in wire.errors] == ["ElicitRequest"]  # the bad default
    wire.errors.clear()


def test_a_url_only_client_is_not_sent_a_form(connect, wire):
    client = connect(
        UNTESTED,
        elicitation_handler=lambda params: {"action": "decline"},
        elicitation_modes=("url",),
    )
    assert sent_capabilities(wire)["elicitation"] == {"url": {}}
    text = client.call_tool("elicit_form").content[0].text
    assert text.startswith("CapabilityError") and "form" in text
    assert wire.received("elicitation/create") == []


def test_a_client_without_an_elicitation_handler_answers_method_not_found(connect, wire):
    client = connect(UNTESTED)
    assert "elicitation" not in sent_capabilities(wire)
    params = {"mode": "form", "message": "Your name?", "requestedSchema": NAME_SCHEMA}
    assert sent_anyway(client, "elicitation/create", params)["error"] == -32601


def test_server_rejects_accepted_content_that_breaks_the_schema(connect, wire):
    # The required name is missing: a form's values of the wrong type the client refuses itself
    # (test_an_elicitation_handlers_malformed_answer_is_a_local_error); the rest of the schema
    # (required, enum, bounds) the server checks.
    answers = [
        {"action": "accept", "content": {"nickname": "Ada"}},
        {"action": "accept", "content": {"name": "Ada"}},
    ]
    client = connect(UNTESTED, elicitation_handler=lambda params: answers.pop(0))
    text = client.call_tool("elicit_form").content[0].text
    assert text.startswith("InvalidParams") and "does not match the requested schema" in text
    assert json.loads(client.call_tool("elicit_form").content[0].text) == {
        "action": "accept",
        "content": {"name": "Ada"},
    }


def test_a_client_without_roots_answers_roots_list_with_method_not_found(connect, wire):
    client = connect(UNTESTED)
    assert "roots" not in sent_capabilities(wire)
    assert sent_anyway(client, "roots/list")["error"] == -32601


def test_roots_must_be_file_uris(tmp_path):
    record = tmp_path / "received"
    with pytest.raises(ValueError, match="file://"):
        Client.stdio(
            [*RAW_SERVER, "silent-init", str(record)],
            roots=["http://x"],
            stderr="capture",
            shutdown_timeout=5,
        )
    # Refused before anything was sent; the server that had been started was shut down.
    assert record.read_text().splitlines() == ["EOF"]


# -- spec_notes items ------------------------------------------------------------------------------

USER_MESSAGE = {"role": "user", "content": {"type": "text", "text": "Hello?"}}


def answer_sampling(params):
    return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


@pytest.mark.parametrize(
    "params",
    [
        {"messages": [USER_MESSAGE]},  # no maxTokens
        {"maxTokens": 5},  # no messages
        {"messages": "Hello?", "maxTokens": 5},  # messages not an array
        {"messages": USER_MESSAGE, "maxTokens": 5},  # messages an object, not an array
        {"messages": [42], "maxTokens": 5},  # a message that is not an object
        {"messages": [{"role": "user"}], "maxTokens": 5},  # a message without content
        {
            "messages": [{"role": "user", "content": {"type": "text"}}],
            "maxTokens": 5,
        },  # a text block without text
        {"messages": [USER_MESSAGE], "maxTokens": "five"},  # maxTokens not an integer
    ],
    ids=[
        "no-max-tokens",
        "no-messages",
        "messages-string",
        "messages-object",
        "message-not-object",
        "message-without-content",
        "text-without-text",
        "max-tokens-string",
    ],
)
def test_malformed_sampling_params_are_invalid_params(connect, wire, params):
    seen: list = []
    client = connect(UNTESTED, sampling_handler=lambda p: seen.append(p) or answer_sampling(p))
    assert sent_anyway(client, "sampling/createMessage", params)["error"] == -32602
    assert seen == []  # the handler never ran
    assert "result" in sent_anyway(
        client, "sampling/createMessage", {"messages": [USER_MESSAGE], "maxTokens": 5}
    )
    # The request the server sent on purpose breaks the schema; everything else must not.
    assert wire.errors and all(e.startswith("CreateMessageRequest:") for e in wire.errors)
    wire.errors.clear()


def test_a_sampling_handler_that_raises_mcp_error_answers_with_its_code(connect, wire):
    from mcp_ref import McpError

    def handler(params):
        raise McpError("User rejected sampling request", code=-1)

    client = connect(UNTESTED, sampling_handler=handler)
    answer = sent_anyway(
        client, "sampling/createMessage", {"messages": [USER_MESSAGE], "maxTokens": 5}
    )
    assert answer == {"error": -1, "message": "User rejected sampling request"}
    (sent,) = [m for m in wire.sent() if "error" in m]
    assert sent["error"] == {"code": -1, "message": "User rejected sampling request"}


def test_tasks_are_ignored_or_method_not_found_by_the_client(connect, wire):
    seen: list = []
    client = connect(UNTESTED, sampling_handler=lambda p: seen.append(p) or answer_sampling(p))
    assert "tasks" not in sent_capabilities(wire)
    for method, params in (
        ("tasks/get", {"taskId": "t"}),
        ("tasks/result", {"taskId": "t"}),
        ("tasks/list", {}),
        ("tasks/cancel", {"taskId": "t"}),
    ):
        assert sent_anyway(client, method, params)["error"] == -32601, method
    # A task-augmented sampling request is processed normally: the plain result, not a CreateTaskResult.
    answer = sent_anyway(
        client,
        "sampling/createMessage",
        {"messages": [USER_MESSAGE], "maxTokens": 5, "task": {"ttl": 1000}},
    )
    assert answer == {"result": answer_sampling(None)}
    (params,) = seen
    assert params.raw["task"] == {"ttl": 1000}


NOTES_SERVER = InMemory("notes_server")


def test_url_elicitation_required_error_reaches_the_client_as_its_class(connect, wire):
    from servers.notes_server import SIGN_IN

    from mcp_ref.errors import UrlElicitationRequired

    client = connect(NOTES_SERVER)
    with pytest.raises(UrlElicitationRequired) as caught:
        client.call_tool("needs_sign_in")
    assert caught.value.code == -32042 and caught.value.elicitations == [SIGN_IN]
    (answer,) = [m for m in wire.received() if "error" in m]
    assert answer["error"] == {
        "code": -32042,
        "message": "This request requires sign-in",
        "data": {"elicitations": [SIGN_IN]},
    }


def test_set_roots_refuses_a_non_file_uri_and_keeps_the_old_roots(connect, wire):
    client = connect(UNTESTED, roots=["file:///work"])
    with pytest.raises(ValueError, match="file://"):
        client.set_roots(["file:///ok", "https://example.com/not-a-root"])
    assert wire.sent("notifications/roots/list_changed") == []
    assert json.loads(client.call_tool("roots").content[0].text) == ["file:///work"]


def test_cancelling_a_call_cancels_what_its_handler_asked_the_client(wire):
    """2025-11-25 basic/utilities/cancellation: the receiver SHOULD "Stop processing the cancelled
    request" and "Free associated resources": the server cancels the elicitation its handler is
    waiting on, and the handler ends at once instead of waiting for the client's answer."""
    server = Server("asks")
    handler_ended: dict = {}
    ended = threading.Event()

    @server.tool()
    def ask(ctx: Context) -> str:
        """Asks the user, then says what they did."""
        try:
            return ctx.elicit("ok?", {"type": "object", "properties": {}}).action
        except RequestCancelled as exc:
            handler_ended["error"] = exc
            raise
        finally:
            ended.set()

    asked, release = threading.Event(), threading.Event()

    def answer(params):
        asked.set()
        release.wait(WAIT)
        return {"action": "accept", "content": {}}

    with Client.in_memory(
        server, era="handshake", elicitation_handler=answer, timeout=WAIT, trace=wire
    ) as client:
        call = client.start_tool_call("ask")
        assert asked.wait(WAIT)
        assert call.cancel("the user gave up") is True
        assert ended.wait(WAIT)  # the client has not answered: the handler no longer waits for it
        assert isinstance(handler_ended["error"], RequestCancelled)
        release.set()
        assert client.call_tool("ask").text == "accept"  # both sides go on
    # read after the next call: the server's messages arrive in order, so the cancellation was
    # read (and traced) before that call's answer
    elicitation = wire.received("elicitation/create")[0]
    assert wire.received("notifications/cancelled")[0]["params"] == {
        "requestId": elicitation["id"],
        "reason": "the request it was sent for was cancelled",
    }
    # the cancelled call got no answer (cancellation: "Not send a response for the cancelled request")
    assert not [m for m in wire.received() if m.get("id") == call.request_id and "method" not in m]


def test_close_warns_when_a_handler_of_the_client_ignores_its_cancellation(monkeypatch, caplog):
    """``close()`` waits a bounded time for the client's own handlers.  Was: when an elicitation
    handler ignored its cancellation past that wait, ``close()`` returned in silence, the handler's
    thread still running; now it says so in a warning (and still returns)."""
    from mcp_ref.client import client as client_module

    monkeypatch.setattr(client_module, "CLOSE_WAIT", 0.05)  # the handler below outlasts any wait
    server = Server("asks")
    asked, release = threading.Event(), threading.Event()

    @server.tool()
    def ask(ctx: Context) -> str:
        """Asks the user."""
        return ctx.elicit("name?", {"type": "object", "properties": {}}).action

    def answer(params):
        asked.set()
        release.wait(WAIT)  # deaf to its cancellation
        return {"action": "accept", "content": {}}

    client = Client.in_memory(server, era="handshake", elicitation_handler=answer, timeout=WAIT)
    try:
        client.start_tool_call("ask")
        assert asked.wait(WAIT)
        with caplog.at_level("WARNING", logger="mcp_ref.client.client"):
            client.close()
        assert "a handler of this client still runs" in caplog.text
    finally:
        release.set()
    assert client.session.wait_closed(WAIT)  # the handler returned: the connection ended
