"""The conformance "everything server": what the official MCP conformance suite's server scenarios call.

Written with mcp_ref's Server API from the scenario descriptions of
@modelcontextprotocol/conformance 0.2.0-alpha.12 (see README.md beside this file).

    python tests/conformance/server.py --port 8000      # Streamable HTTP at http://127.0.0.1:8000/mcp
    python tests/conformance/server.py --stdio          # the same server over stdio
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import struct
import sys
import time
import wave
import zlib
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parents[2])
)  # run from a checkout without installing

from mcp_ref import (
    AudioContent,
    Context,
    Elicit,
    EmbeddedResource,
    ImageContent,
    ListRoots,
    PromptMessage,
    Sample,
    Server,
    TextContent,
    TextResourceContents,
    ToolError,
)

# -- media made here: a 1x1 red PNG and a short silent WAV -----------------------------------


def _png_1x1_red() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0, then one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _wav_silence(seconds: float = 0.05, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x00" * int(seconds * rate))
    return buffer.getvalue()


PNG = _png_1x1_red()
PNG_B64 = base64.b64encode(PNG).decode("ascii")
WAV_B64 = base64.b64encode(_wav_silence()).decode("ascii")

server = Server(
    "mcp-ref-conformance-server",
    version="1.0.0",
    instructions="The mcp_ref server for the MCP conformance suite.",
)

# -- tools -------------------------------------------------------------------------------------


@server.tool()
def test_simple_text() -> str:
    """Return one text block."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content():
    """Return one image block (a 1x1 red PNG)."""
    return ImageContent(data=PNG_B64, mime_type="image/png")


@server.tool()
def test_audio_content():
    """Return one audio block (a short silent WAV)."""
    return AudioContent(data=WAV_B64, mime_type="audio/wav")


@server.tool()
def test_embedded_resource():
    """Return one embedded text resource."""
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
    )


@server.tool()
def test_multiple_content_types() -> list:
    """Return a text, an image and an embedded resource block."""
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG_B64, mime_type="image/png"),
        EmbeddedResource(
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            )
        ),
    ]


@server.tool()
def test_tool_with_logging(ctx: Context) -> str:
    """Send three info log messages while running, about 50 ms apart."""
    ctx.info("Tool execution started")
    time.sleep(0.05)
    ctx.info("Tool processing data")
    time.sleep(0.05)
    ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
def test_error_handling() -> str:
    """Always fail with a tool error (isError: true)."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool()
def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 of 100, about 50 ms apart (when the caller sent a progress token)."""
    ctx.report_progress(0, 100)
    time.sleep(0.05)
    ctx.report_progress(50, 100)
    time.sleep(0.05)
    ctx.report_progress(100, 100)
    return "Tool with progress executed successfully"


@server.tool()
def test_sampling(prompt: str, ctx: Context) -> str:
    """Ask the client's LLM to answer a prompt (sampling/createMessage).

    Args:
        prompt: The prompt to send to the LLM.
    """
    answer = ctx.sample(prompt, max_tokens=100)
    content = answer.content
    text = getattr(content, "text", None)
    return (
        f"LLM response: {text if text is not None else json.dumps(answer.to_wire().get('content'))}"
    )


@server.tool()
def test_elicitation(message: str, ctx: Context) -> str:
    """Ask the user for a username and an email address (elicitation/create).

    Args:
        message: The message to show the user.
    """
    result = ctx.elicit(
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@server.tool()
def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicit with a default value for every primitive type (SEP-1034)."""
    result = ctx.elicit(
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {
                    "type": "boolean",
                    "description": "Verification status",
                    "default": True,
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.tool()
def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicit with the five enum schema variants (SEP-1330)."""
    result = ctx.elicit(
        "Please choose from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Untitled single-select",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Titled single-select",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Legacy titled enum (enumNames, deprecated)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Untitled multi-select",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Titled multi-select",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        },
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    input_schema=JSON_SCHEMA_2020_12,
)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    return "Received: " + json.dumps(
        {
            k: v
            for k, v in {
                "name": name,
                "address": address,
                "contactMethod": contactMethod,
                "phone": phone,
                "email": email,
            }.items()
            if v is not None
        }
    )


@server.tool()
def test_reconnection(ctx: Context) -> str:
    """Close this call's SSE connection mid-call, then answer (server-sse-polling).

    ``ctx.close_sse_stream()`` sends an event with ``retry`` and ends the connection without
    ending the stream; the client resumes with GET + Last-Event-ID and gets the answer there.
    """
    ctx.info("Reconnection test started")
    ctx.close_sse_stream()
    ctx.request.cancelled.wait(
        0.2
    )  # long enough that the answer comes after the client reconnected
    return "Reconnection test completed successfully"


# -- 2026-07-28: the stateless era (server-stateless, input-required-result-*) ------------------
# The same handlers serve both eras: ctx.elicit / ctx.sample / ctx.list_roots send a request in the
# handshake era and, at 2026-07-28, end in an InputRequiredResult answered by the client's retry.

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool()
def test_missing_capability(ctx: Context) -> str:
    """Needs sampling: a client that did not declare it gets -32021 naming it (2026-07-28)."""
    answer = ctx.sample("Say anything.", max_tokens=10)
    return f"The client said: {answer.content.text if hasattr(answer.content, 'text') else '...'}"


@server.tool()
def test_streaming_elicitation(ctx: Context) -> str:
    """Ask for a name; never a request of its own on the response stream (MRTR instead)."""
    answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@server.tool()
def test_logging_tool(ctx: Context) -> str:
    """Log one message: sent only to a request that set io.modelcontextprotocol/logLevel (2026-07-28)."""
    ctx.info("test_logging_tool ran")
    return "Logged, if asked to."


@server.tool()
def test_input_required_result_elicitation(ctx: Context) -> str:
    """MRTR: ask the user's name (key user_name), then greet them."""
    answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@server.tool()
def test_input_required_result_sampling(ctx: Context) -> str:
    """MRTR: ask the client's LLM a question (key capital_question)."""
    answer = ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"The model answered: {getattr(answer.content, 'text', '')}"


@server.tool()
def test_input_required_result_list_roots(ctx: Context) -> str:
    """MRTR: ask for the client's roots (key client_roots)."""
    roots = ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(root.uri for root in roots)


@server.tool()
def test_input_required_result_request_state(ctx: Context) -> str:
    """MRTR with requestState: ask for confirmation (key confirm); the state carries the round."""
    answer = ctx.elicit(
        "Confirm?",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    return "state-ok" if (answer.content or {}).get("ok") else "state-not-confirmed"


@server.tool()
def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """MRTR: three asks in one round (elicitation, sampling, roots)."""
    name, greeting, roots = ctx.gather(
        Elicit("What is your name?", NAME_SCHEMA, key="user_name"),
        Sample("Generate a greeting", max_tokens=50, key="greeting"),
        ListRoots(key="client_roots"),
    )
    return (
        f"name={(name.content or {}).get('name')} greeting={getattr(greeting.content, 'text', '')} "
        f"roots={len(roots)}"
    )


@server.tool()
def test_input_required_result_multi_round(ctx: Context) -> str:
    """MRTR over two rounds: a name (step1), then a colour (step2)."""
    name = ctx.elicit("What is your name?", NAME_SCHEMA, key="step1")
    color = ctx.elicit(
        "What is your favourite colour?",
        {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        key="step2",
    )
    return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}"


@server.tool()
def test_input_required_result_tampered_state(ctx: Context) -> str:
    """MRTR whose requestState is checked: a changed state is refused (-32602)."""
    answer = ctx.elicit(
        "Confirm?",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    return "confirmed" if (answer.content or {}).get("ok") else "not confirmed"


@server.tool()
def test_input_required_result_capabilities(ctx: Context) -> str:
    """MRTR that asks only for what the client declared (never an undeclared kind of input)."""
    declared = ctx.client_capabilities
    if "sampling" in declared:
        answer = ctx.sample("Say hello.", max_tokens=20, key="hello")
        return f"sampled: {getattr(answer.content, 'text', '')}"
    if "elicitation" in declared:
        answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"elicited: {(answer.content or {}).get('name')}"
    if "roots" in declared:
        return f"roots: {len(ctx.list_roots(key='client_roots'))}"
    return "the client declared no way to ask it anything"


@server.tool(headers={"region": "Region", "priority": "Priority"})
def test_header_params(region: str, query: str = "", priority: int = 0) -> str:
    """Mirror region and priority into Mcp-Param-Region / Mcp-Param-Priority (2026-07-28 x-mcp-header)."""
    return f"region={region} priority={priority} query={query}"


# -- the tasks extension (io.modelcontextprotocol/tasks, SEP-2663), the tasks-* scenarios ----------

CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


@server.tool()
def greet(name: str) -> str:
    """Greet someone (never a task)."""
    return f"Hello, {name}!"


@server.tool(task="optional")
def slow_compute(ctx: Context, seconds: float = 1, label: str = "") -> str:
    """Compute for a while: a task for a client that takes tasks (immediately done for 0 seconds)."""
    if seconds > 0:
        ctx.start_task()
        ctx.sleep(seconds)  # cancelled at once by tasks/cancel
    return f"computed {label} in {seconds:g} s"


@server.tool(task="required")
def failing_job(ctx: Context) -> str:
    """Always runs as a task, which completes with a tool error (isError)."""
    ctx.start_task()
    raise ToolError("the job failed")


@server.tool(task="required")
def protocol_error_job(ctx: Context) -> str:
    """A task that fails with a JSON-RPC error."""
    from mcp_ref import McpError

    ctx.start_task()
    raise McpError("the job hit a protocol error", code=-32603)


@server.tool(task="required")
def confirm_delete(filename: str, ctx: Context) -> str:
    """A task that asks the user to confirm (input_required inside the task)."""
    ctx.start_task()
    answer = ctx.elicit(f"Delete {filename}?", CONFIRM, key="confirm")
    confirmed = answer.action == "accept" and answer.content.get("confirm")
    return f"deleted {filename}" if confirmed else f"kept {filename}"


@server.tool(task="required")
def multi_input(ctx: Context) -> str:
    """A task that asks two things at once."""
    ctx.start_task()
    first, second = ctx.gather(
        Elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name"
        ),
        Elicit("Sure?", CONFIRM, key="sure"),
    )
    return f"{first.content.get('name')} / {second.content.get('name')}"


@server.tool(task="optional")
def test_tool_with_task(ctx: Context) -> str:
    """Ask the user's name first (input_required, before the task), then greet them as a task."""
    answer = ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        key="user_name",
    )
    ctx.start_task()
    return f"Hello, {answer.content['name']}!"


def _come_or_go(kind: str, name: str) -> str:
    """Register ``name`` (a tool or a prompt), or unregister it if present: a list change."""
    find, add, remove = (
        (server.get_tool, server.add_tool, server.remove_tool)
        if kind == "tools"
        else (server.get_prompt, server.add_prompt, server.remove_prompt)
    )
    if find(name) is None:
        add(lambda: "here for now", name=name, description="Comes and goes")
    else:
        remove(name)
    return f"{kind} changed"


@server.tool()
def test_trigger_tool_change() -> str:
    """Change the tool list (a tool appears, or goes again): tools/list_changed for listen streams."""
    return _come_or_go("tools", "test_transient_tool")


@server.tool()
def test_trigger_prompt_change() -> str:
    """Change the prompt list: prompts/list_changed for listen streams."""
    return _come_or_go("prompts", "test_transient_prompt")


@server.prompt()
def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user for context first (MRTR on prompts/get)."""
    answer = ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
        key="user_context",
    )
    return f"Use this context: {(answer.content or {}).get('context')}"


# -- resources ---------------------------------------------------------------------------------


@server.resource(
    "test://static-text",
    name="static-text",
    description="A static text resource",
    mime_type="text/plain",
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary",
    name="static-binary",
    description="A static binary resource (a PNG)",
    mime_type="image/png",
)
def static_binary() -> bytes:
    return PNG


@server.resource(
    "test://template/{id}/data",
    name="template-data",
    description="Data for an id",
    mime_type="application/json",
)
def template_data(id: str) -> TextResourceContents:
    return TextResourceContents(
        uri=f"test://template/{id}/data",
        mime_type="application/json",
        text=json.dumps(
            {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
        ),
    )


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    description="A resource that can be subscribed to",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return "Watched resource content"


# -- prompts -----------------------------------------------------------------------------------


@server.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed
    """
    return [
        PromptMessage(
            role="user",
            content=EmbeddedResource(
                resource=TextResourceContents(
                    uri=resourceUri,
                    mime_type="text/plain",
                    text="Embedded resource content for testing.",
                )
            ),
        ),
        PromptMessage(
            role="user", content=TextContent(text="Please process the embedded resource above.")
        ),
    ]


@server.prompt()
def test_prompt_with_image() -> list:
    """A prompt with an image."""
    return [
        PromptMessage(role="user", content=ImageContent(data=PNG_B64, mime_type="image/png")),
        PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
    ]


# -- completion --------------------------------------------------------------------------------

_CANDIDATES = ["paris", "park", "party", "test", "testing", "tested"]


@server.completion(prompt="test_prompt_with_arguments")
def complete_prompt_arguments(argument: str, value: str, context: dict) -> list:
    return [c for c in _CANDIDATES if c.startswith(value)]


@server.completion(resource="test://template/{id}/data")
def complete_template_id(argument: str, value: str, context: dict) -> list:
    return [i for i in ("1", "2", "3", "123") if i.startswith(value)]


# -- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--stateless", action="store_true", help="serve without sessions")
    parser.add_argument(
        "--stdio", action="store_true", help="serve on stdin/stdout instead of HTTP"
    )
    args = parser.parse_args(argv)
    if args.stdio:
        server.run_stdio()
    else:
        server.run_http(host=args.host, port=args.port, path=args.path, stateless=args.stateless)


if __name__ == "__main__":
    main()
