"""FastMCP's README server ported to mcp_ref (issue 23, "Done when"): tests/servers/fastmcp_readme_port.py is
written as a FastMCP user writes it (typed parameters, pydantic models and Field, Context in async tools,
resources, a template, a prompt); each tool, resource and prompt is used over stdio, a real subprocess, and
answers as under FastMCP.  The one line that differs (the import) is marked "# mcp_ref:" in the server.
"""

from __future__ import annotations

import json
import sys
import threading

import pytest
from conftest import SERVERS

from mcp_ref import Client, CreateMessageResult, TextContent

PORT = SERVERS / "fastmcp_readme_port.py"


def sampler(params):
    text = params.messages[0].content.text
    return CreateMessageResult(
        role="assistant",
        content=TextContent(text=f"summary of {len(text)} characters"),
        model="test-model",
        stop_reason="endTurn",
    )


@pytest.fixture(scope="module", params=["handshake", "modern"])
def port(request):
    logs: list = []
    logged = threading.Event()

    def on_log(message):
        logs.append(message)
        logged.set()

    with Client.stdio(
        [sys.executable, str(PORT)], era=request.param, sampling_handler=sampler, on_log=on_log
    ) as client:
        client.set_logging_level("debug")
        yield client, logs, logged


def test_only_the_import_line_differs():
    changed = [line.strip() for line in PORT.read_text().splitlines() if "# mcp_ref:" in line]
    assert len(changed) == 1 and changed[0].startswith(
        "from mcp_ref import Context, Server as FastMCP"
    ), changed
    assert (
        PORT.read_text().rstrip().endswith('if __name__ == "__main__":\n    mcp.run()')
    )  # run() as in FastMCP


@pytest.mark.slow
def test_the_simple_tools_answer_as_under_fastmcp(port):
    client, _, _ = port
    assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
    assert client.call_tool("multiply", {"a": 1.5, "b": 4}).structured_content == {"result": 6.0}
    assert client.call_tool("hello", {"name": "Ada"}).content[0].text == "Hello, Ada!"
    tools = {t.name: t for t in client.list_tools()}
    assert tools["add"].description == "Add two numbers"
    assert tools["add"].input_schema["properties"] == {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
    }


@pytest.mark.slow
def test_a_pydantic_model_in_and_a_receipt_with_rich_types_out(port):
    client, _, _ = port
    order = {
        "item": "tea",
        "quantity": 3,
        "ship_to": {"street": "1 Rue", "city": "Paris", "postcode": "75001"},
    }
    result = client.call_tool("place_order", {"order": order, "unit_price": "2.10"})
    assert not result.is_error, result
    receipt = {
        "order_id": "3481415b-5635-5231-9aca-ad93741958d9",
        "placed_at": "2025-01-02T03:04:05Z",
        "total": "6.30",
        "order": order,
    }
    assert json.loads(result.content[0].text) == receipt
    assert result.structured_content == receipt
    schema = next(t for t in client.list_tools() if t.name == "place_order").input_schema
    postcode = schema["properties"]["order"]["properties"]["ship_to"]["properties"]["postcode"]
    assert postcode["pattern"] == r"^\d{5}$" and postcode["description"] == "Five digits"
    bad = {**order, "ship_to": {**order["ship_to"], "postcode": "75"}}
    assert client.call_tool(
        "place_order", {"order": bad, "unit_price": "1"}
    ).is_error  # 2025-11-25 and later


@pytest.mark.slow
def test_field_descriptions_and_literals_reach_the_schema(port):
    client, _, _ = port
    schema = next(t for t in client.list_tools() if t.name == "get_weather").input_schema
    assert schema["properties"]["city"] == {"type": "string", "description": "The city to look up"}
    assert schema["properties"]["unit"] == {
        "type": "string",
        "enum": ["celsius", "fahrenheit"],
        "default": "celsius",
    }
    result = client.call_tool("get_weather", {"city": "Oslo", "unit": "fahrenheit"})
    assert result.structured_content == {"city": "Oslo", "temperature": 72.5, "unit": "fahrenheit"}


@pytest.mark.slow
def test_an_async_tool_logs_and_reports_progress_with_await(port):
    client, logs, logged = port
    progress: list = []
    result = client.call_tool(
        "long_running_task",
        {"task_name": "brew", "steps": 3},
        on_progress=lambda p, total, message: progress.append((p, total, message)),
    )
    assert result.content[0].text == "Task 'brew' completed"
    assert progress == [(1 / 3, 1.0, "Step 1/3"), (2 / 3, 1.0, "Step 2/3"), (1.0, 1.0, "Step 3/3")]
    assert logged.wait(10)
    assert any(m.level == "info" and m.data == "Starting: brew" for m in logs)


@pytest.mark.slow
def test_an_async_tool_reads_a_resource_and_samples_the_client(port):
    client, _, _ = port
    result = client.call_tool("process_data", {"uri": "config://version"})
    assert not result.is_error, result
    assert result.content[0].text == "summary of 16 characters"  # "Summarize: 2.0.1"


@pytest.mark.slow
def test_resources_a_typed_template_and_a_prompt(port):
    client, _, _ = port
    assert client.read_resource("config://version").contents[0].text == "2.0.1"
    profile = json.loads(client.read_resource("users://7/profile").contents[0].text)
    assert profile == {"name": "User 7", "status": "active", "next": 8}  # user_id arrived as an int
    messages = client.get_prompt("summarize_request", {"text": "MCP"}).messages
    assert (
        messages[0].role == "user"
        and messages[0].content.text == "Please summarize the following text:\n\nMCP"
    )
