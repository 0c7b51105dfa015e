"""Prompts over real stdio: listing with argument descriptions from docstrings,
rendering with arguments, argument checks, and every kind of message content.

Every message is validated against the negotiated revision's official schema.
"""

from __future__ import annotations

import base64
import sys

import pytest
from conftest import SERVERS, client_pool
from servers.feature_prompts import AUDIO, BLOB, IMAGE

from mcp_ref import SUPPORTED_VERSIONS, InvalidParams
from mcp_ref.feature_types import GetPromptResult, Prompt, PromptArgument, PromptMessage
from mcp_ref.types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

PROMPTS = [sys.executable, str(SERVERS / "feature_prompts.py")]


pool = client_pool(PROMPTS)  # a module-scoped fixture; each test's messages must be schema-valid


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_list_prompts_with_argument_descriptions(pool, version):
    prompts = {p.name: p for p in pool.client(version).list_prompts()}
    assert list(prompts) == ["summarize", "conversation", "media", "typed", "plain"]
    summarize = prompts["summarize"]
    assert isinstance(summarize, Prompt)
    assert summarize.description == "Summarise a text in a given style."
    assert all(isinstance(a, PromptArgument) for a in summarize.arguments)
    assert [(a.name, a.description, a.required) for a in summarize.arguments] == [
        ("text", "The text to summarise.", True),
        ("style", "How long the summary should be.", False),
        ("max_words", "An upper bound on the summary's length.", False),
    ]
    if version >= "2025-06-18":
        assert summarize.title == "Summarise a text"
    else:  # titles came in 2025-06-18
        assert summarize.title is None and "title" not in summarize.raw
    assert prompts["plain"].description == "Explicitly described."
    assert not prompts["plain"].arguments


def test_get_prompt_with_arguments(pool):
    peer = pool.peer()
    result = peer.client.get_prompt(
        "summarize", {"text": "A long story.", "style": "long", "max_words": 30}
    )
    assert isinstance(result, GetPromptResult)
    assert result.description == "Summarise a text in a given style."
    assert len(result.messages) == 1
    message = result.messages[0]
    assert isinstance(message, PromptMessage) and message.role == "user"
    assert isinstance(message.content, TextContent)
    # max_words went over the wire as the string "30" and reached the function as an int.
    assert (
        message.content.text == "Summarise in a long style, at most 30 words (int):\nA long story."
    )
    sent = peer.wire.sent("prompts/get")[-1]["params"]
    assert sent == {
        "name": "summarize",
        "arguments": {"text": "A long story.", "style": "long", "max_words": "30"},
    }


def test_get_prompt_applies_defaults(pool):
    result = pool.client().get_prompt("summarize", {"text": "Short."})
    assert (
        result.messages[0].content.text
        == "Summarise in a short style, at most 50 words (int):\nShort."
    )


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ({"count": "5"}, "count=5 key='k' flag=None"),
        ({"count": "null"}, "count=None key='k' flag=None"),
        ({"key": "7"}, "count=None key=7 flag=None"),
        ({"key": "seven"}, "count=None key='seven' flag=None"),
        ({"flag": "true"}, "count=None key='k' flag=True"),
        ({"flag": "false", "count": "0"}, "count=0 key='k' flag=False"),
    ],
)
def test_arguments_of_more_than_one_type_are_converted(pool, arguments, expected):
    # Optional[int], int | str, Optional[bool]: converted as a resource template's variables are
    # (each argument arrives as a string: 2025-11-25 server/prompts, GetPromptRequest).
    assert pool.client().get_prompt("typed", arguments).messages[0].content.text == expected


@pytest.mark.parametrize("arguments", [{"count": "five"}, {"flag": "maybe"}, {"count": "1.5"}])
def test_an_argument_of_none_of_its_types_is_invalid_params(pool, arguments):
    with pytest.raises(InvalidParams) as caught:
        pool.client().get_prompt("typed", arguments)
    assert caught.value.code == -32602 and next(iter(arguments)) in caught.value.message


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize(
    "name, arguments",
    [
        ("summarize", {}),
        ("summarize", {"style": "long"}),
        ("summarize", {"text": "x", "colour": "red"}),
        ("summarize", {"text": "x", "max_words": "many"}),
        ("summarize", {"text": "x", "style": "medium"}),
        ("no_such_prompt", {}),
    ],
    ids=[
        "no-arguments",
        "missing-required",
        "unknown-argument",
        "not-an-integer",
        "not-a-literal",
        "unknown-prompt",
    ],
)
def test_bad_prompt_requests_are_invalid_params(pool, version, name, arguments):
    with pytest.raises(InvalidParams) as caught:
        pool.client(version).get_prompt(name, arguments)
    assert caught.value.code == -32602


def test_messages_of_several_roles(pool):
    result = pool.client().get_prompt("conversation", {"topic": "tides"})
    assert [(m.role, m.content.text) for m in result.messages] == [
        ("user", "Tell me about tides."),
        ("assistant", "What would you like to know about tides?"),
        ("user", "Everything."),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "version", [v for v in SUPPORTED_VERSIONS if v >= "2025-03-26"]
)  # audio came in 2025-03-26
def test_messages_with_text_image_audio_and_embedded_resources(pool, version):
    messages = pool.client(version).get_prompt("media").messages
    assert [type(m.content) for m in messages] == [
        TextContent,
        ImageContent,
        AudioContent,
        EmbeddedResource,
        EmbeddedResource,
    ]
    text, image, audio, embedded_text, embedded_blob = (m.content for m in messages)
    assert text.text == "Look at these."
    assert (image.data, image.mime_type) == (IMAGE, "image/png")
    assert base64.b64decode(image.data).startswith(b"\x89PNG")
    assert (audio.data, audio.mime_type) == (AUDIO, "audio/wav")
    assert isinstance(embedded_text.resource, TextResourceContents)
    assert (
        embedded_text.resource.uri,
        embedded_text.resource.text,
        embedded_text.resource.mime_type,
    ) == ("feature://notes.md", "# Notes\n", "text/markdown")
    assert isinstance(embedded_blob.resource, BlobResourceContents)
    assert (
        base64.b64decode(embedded_blob.resource.blob) == base64.b64decode(BLOB) == bytes(range(64))
    )
    assert [m.role for m in messages] == ["user"] * 4 + ["assistant"]
    assert messages[1].content.raw == {"type": "image", "data": IMAGE, "mimeType": "image/png"}


@pytest.mark.slow
def test_audio_becomes_a_text_note_for_a_2024_11_05_peer(pool):
    # AudioContent does not exist before 2025-03-26: the message must stay valid for that schema.
    messages = pool.client("2024-11-05").get_prompt("media").messages
    assert [type(m.content) for m in messages] == [
        TextContent,
        ImageContent,
        TextContent,
        EmbeddedResource,
        EmbeddedResource,
    ]
    assert (
        messages[2].content.text
        == "[audio content (audio/wav) cannot be sent with protocol version 2024-11-05]"
    )


# -- spec_notes items ------------------------------------------------------------------------------

NOTES_SERVER = [sys.executable, str(SERVERS / "notes_server.py")]


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_prompt_icons_and_resource_links_follow_the_revision(connect, wire, version):
    from servers.notes_server import ICONS, LINK

    from mcp_ref.types import ResourceLink

    client = connect(NOTES_SERVER, protocol_version=version)
    iconic = [p for p in client.list_prompts() if p.name == "iconic"][0]
    expected = {"name": "iconic", "description": "A prompt with icons.", "arguments": []}
    if version >= "2025-06-18":
        expected["title"] = "An iconic prompt"
    if version >= "2025-11-25":
        expected["icons"] = ICONS
    assert iconic.raw == expected
    # A resource_link message, built by the server or returned ready-made as a GetPromptResult.
    for name, role in (("link", "user"), ("link_result", "assistant")):
        (message,) = client.get_prompt(name).messages
        assert message.role == role
        if version >= "2025-06-18":
            assert isinstance(message.content, ResourceLink) and message.content.raw == LINK
        else:
            assert isinstance(message.content, TextContent)
            assert message.content.text == "Resource notes: file:///srv/notes.txt"


# -- inputs checked as documented ------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [[], 0, False, "", None, ["text", "x"]])
def test_arguments_that_are_not_an_object_are_invalid_params(raw_peer, arguments):
    """``arguments`` defaults to none only when absent (schema ``GetPromptRequest``: an object of
    strings): a present one that is not an object is -32602, never read as "no arguments", and the
    connection goes on."""
    peer = raw_peer(PROMPTS)
    assert peer.initialize("2025-11-25")["result"]["protocolVersion"] == "2025-11-25"
    params = {"name": "typed", "arguments": arguments}
    peer.send_json({"jsonrpc": "2.0", "id": 7, "method": "prompts/get", "params": params})
    reply = peer.recv()
    assert reply["id"] == 7 and reply["error"]["code"] == -32602, reply
    params = {"name": "typed"}
    peer.send_json({"jsonrpc": "2.0", "id": 8, "method": "prompts/get", "params": params})
    assert peer.recv()["result"]["messages"][0]["content"]["text"] == "count=None key='k' flag=None"


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_a_literal_parameter_offers_its_choices_as_completions(pool, version):
    """With no ``@server.completion``, a ``Literal`` parameter's choices are its completions (those
    starting with the value typed), and the server declares ``completions`` (from 2025-03-26)."""
    client = pool.client(version)
    if version >= "2025-03-26":
        assert "completions" in client.server_capabilities
    assert client.complete(prompt="summarize", argument="style", value="").values == [
        "short",
        "long",
    ]
    assert client.complete(prompt="summarize", argument="style", value="l").values == ["long"]
    assert client.complete(prompt="summarize", argument="text", value="").values == []
    with pytest.raises(InvalidParams) as caught:
        client.complete(prompt="summarize", argument="colour", value="")
    assert caught.value.code == -32602 and "colour" in caught.value.message
