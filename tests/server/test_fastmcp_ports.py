"""Three FastMCP servers ported by their import line alone (issue 34, "Done when"): two written for
FastMCP 2.x (``from fastmcp import ...``), one for the official SDK's ``mcp.server.fastmcp``, all in
tests/servers/fastmcp_ports/.  Each test writes the server with that one line replaced by mcp_ref's
(and checks it is the only difference), serves it over stdio in a real subprocess, and has a client
list and use every tool, resource, template and prompt: mcp_ref's Client for all three, and the
official SDK's client for the one written for the official SDK.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import threading
from datetime import UTC, datetime

import pytest
from conftest import SERVERS, WAIT

from mcp_ref import (
    Client,
    CreateMessageResult,
    ElicitResult,
    ImageContent,
    McpError,
    TextContent,
)

PORTS = SERVERS / "fastmcp_ports"
#: Each server's import line, and the line that replaces it.
IMPORT_LINES = {
    "bookshelf_fastmcp2.py": (
        "from fastmcp import Context, FastMCP",
        "from mcp_ref import Context, Server as FastMCP",
    ),
    "weather_official_sdk.py": (
        "from mcp.server.fastmcp import Context, FastMCP, Image",
        "from mcp_ref import Context, Image, Server as FastMCP",
    ),
    "recipes_fastmcp2.py": (
        "from fastmcp import Context, FastMCP",
        "from mcp_ref import Context, Server as FastMCP",
    ),
}

pytestmark = pytest.mark.slow  # each test starts a server in a subprocess


def ported(name: str, tmp_path) -> list[str]:
    """The server ``name`` with its import line changed, written to ``tmp_path``: its command.
    Asserts that the line changed is the only difference."""
    original = (PORTS / name).read_text()
    was, now = IMPORT_LINES[name]
    assert original.count(was + "\n") == 1, f"{name} has no line {was!r}"
    text = original.replace(was + "\n", now + "\n")
    changed = [
        line
        for line in difflib.unified_diff(original.splitlines(), text.splitlines(), lineterm="")
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changed == [f"-{was}", f"+{now}"], changed
    assert (
        "mcp.run()" in text and "import mcp_ref" not in original and "from mcp_ref" not in original
    )
    path = tmp_path / name
    path.write_text(text)
    return [sys.executable, str(path)]


class Logs:
    """The log messages a client received, and progress notifications, with an event to wait on."""

    def __init__(self):
        self.messages: list = []
        self.progress: list = []
        self.arrived = threading.Condition()

    def on_log(self, message):
        with self.arrived:
            self.messages.append(message)
            self.arrived.notify_all()

    def on_progress(self, progress, total, message):
        self.progress.append((progress, total, message))

    def wait_for(self, text: str) -> None:
        with self.arrived:
            found = self.arrived.wait_for(
                lambda: any(text in str(m.data) for m in self.messages), WAIT
            )
        assert found, (text, self.messages)


def text_of(result) -> str:
    return result.content[0].text


# -- FastMCP 2.x: the bookshelf ------------------------------------------------------------------


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_the_bookshelf_written_for_fastmcp_2(tmp_path, era):
    logs = Logs()
    confirmations = iter([True, False])

    def confirm(params):
        assert params.requested_schema["properties"]["confirm"]["type"] == "boolean"
        return ElicitResult(action="accept", content={"confirm": next(confirmations)})

    with Client.stdio(
        ported("bookshelf_fastmcp2.py", tmp_path),
        era=era,
        timeout=WAIT,
        on_log=logs.on_log,
        elicitation_handler=confirm,
    ) as client:
        client.set_logging_level("debug")
        assert client.server_info.name == "Bookshelf"
        assert client.instructions.startswith("A reading list")
        tools = {tool.name: tool for tool in client.list_tools()}
        assert sorted(tools) == [
            "add_book",
            "import_books",
            "list_books",
            "published_before",
            "rate",
            "remove_book",
            "start_reading",
        ]
        assert tools["rate"].description == "Finish a book and give it one to five stars."
        assert tools["list_books"].annotations["readOnlyHint"] is True
        assert tools["rate"].input_schema["properties"]["stars"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 5,
        }

        added = client.call_tool(
            "add_book",
            {"book": {"title": "Dune", "author": "Frank Herbert", "published": "1965-08-01"}},
        ).structured_content
        assert added == {
            "title": "Dune",
            "author": "Frank Herbert",
            "published": "1965-08-01",
            "id": 1,
            "added_at": "2026-03-01T09:30:00Z",
            "status": "to-read",
            "stars": None,
        }
        assert client.call_tool(
            "import_books",
            {"author": "Ursula K. Le Guin", "titles": ["Earthsea", "The Dispossessed"]},
            on_progress=logs.on_progress,
        ).structured_content == {"result": 2}
        logs.wait_for("Importing 2 books by Ursula K. Le Guin")
        assert logs.progress[-1][:2] == (2, 2)
        assert client.call_tool("start_reading", {"book_id": 2}).structured_content["status"] == (
            "reading"
        )
        rated = client.call_tool("rate", {"book_id": 1, "stars": 5}).structured_content
        assert (rated["status"], rated["stars"]) == ("done", 5)
        listed = client.call_tool("list_books", {"status": "to-read"}).structured_content
        assert [book["title"] for book in listed["result"]] == ["The Dispossessed"]
        assert client.call_tool("published_before", {"year": 1970}).structured_content == {
            "result": ["Dune"]
        }

        # errors: a constraint names the problem; a ValueError is masked, as mcp_ref masks
        # every unexpected exception (FastMCP would send its text: raise ToolError for that)
        too_many = client.call_tool("rate", {"book_id": 1, "stars": 6})
        assert too_many.is_error and "stars" in text_of(too_many)
        missing = client.call_tool("start_reading", {"book_id": 99})
        assert missing.is_error and text_of(missing) == (
            "Tool start_reading failed with an internal error"
        )

        # the elicitation before a delete: confirmed, then declined
        assert text_of(client.call_tool("remove_book", {"book_id": 3})) == (
            "Removed The Dispossessed"
        )
        logs.wait_for("Removed The Dispossessed")
        assert text_of(client.call_tool("remove_book", {"book_id": 2})) == "Kept Earthsea"

        assert [r.uri for r in client.list_resources()] == ["shelf://summary"]
        templates = client.list_resource_templates()
        assert [t.uri_template for t in templates] == ["shelf://books/{book_id}"]
        summary = client.read_resource("shelf://summary").contents[0]
        assert json.loads(summary.text) == {"to-read": 0, "reading": 1, "done": 1}
        assert summary.mime_type == "application/json"
        assert client.read_resource("shelf://books/1").contents[0].text == (
            "Dune by Frank Herbert (1965), done"
        )

        prompt = client.get_prompt("pick_next", {"mood": "curious"})
        assert prompt.messages[0].role == "user"
        assert prompt.messages[0].content.text == (
            "I feel curious. Which of these should I read next: nothing yet?"
        )


# -- the official SDK's FastMCP: the weather stations ---------------------------------------------


def check_weather(client, logs: Logs) -> None:
    """What mcp_ref's client sees of the ported weather server."""
    tools = {tool.name: tool for tool in client.list_tools()}
    assert sorted(tools) == [
        "convert",
        "forecast",
        "latest_reading",
        "station_badge",
        "sweep",
        "warmest_station",
    ]
    assert tools["convert"].title == "Convert a temperature"
    assert tools["warmest_station"].description == "The station that is warmest now."
    taken_at = tools["latest_reading"].output_schema["properties"]["taken_at"]
    assert (taken_at["type"], taken_at["format"]) == ("string", "date-time")

    reading = client.call_tool("latest_reading", {"station": "ksea"}).structured_content
    assert reading == {
        "station": "KSEA",
        "taken_at": "2026-04-02T06:00:00Z",
        "temperature_c": 11.5,
        "wind_kmh": 12.0,
    }
    forecast = client.call_tool("forecast", {"station": "EGLL", "days": 2}).structured_content
    assert [day["date"] for day in forecast["days"]] == ["2026-04-02", "2026-04-03"]
    assert forecast["days"][1]["high_c"] == 10.0
    too_long = client.call_tool("forecast", {"station": "EGLL", "days": 8})
    assert too_long.is_error and "days" in text_of(too_long)
    unknown = client.call_tool("latest_reading", {"station": "XXXX"})
    assert unknown.is_error and "internal error" in text_of(unknown)
    assert client.call_tool("convert", {"value": 100, "to": "F"}).structured_content == {
        "result": 212.0
    }
    swept = client.call_tool(
        "sweep", {"stations": ["KSEA", "nowhere", "RJTT"]}, on_progress=logs.on_progress
    )
    assert swept.structured_content == {"KSEA": 11.5, "RJTT": 17.25}
    logs.wait_for("Skipping unknown station nowhere")
    logs.wait_for("Swept 2 stations")
    assert logs.progress[-1] == (3, 3, "3 of 3")
    badge = client.call_tool("station_badge", {"station": "RJTT"}).content[0]
    assert isinstance(badge, ImageContent) and badge.mime_type == "image/png"
    assert text_of(client.call_tool("warmest_station", {})) == "Tokyo Haneda (RJTT) at 17.25 C"

    assert json.loads(client.read_resource("weather://stations").contents[0].text)["EGLL"] == (
        "London Heathrow"
    )
    latest = json.loads(client.read_resource("weather://stations/RJTT/latest").contents[0].text)
    assert latest["temperature_c"] == 17.25
    assert [t.uri_template for t in client.list_resource_templates()] == [
        "weather://stations/{station}/latest"
    ]
    prompts = {prompt.name: prompt for prompt in client.list_prompts()}
    assert prompts["packing"].title == "Packing advice"
    assert [a.name for a in prompts["storm_briefing"].arguments] == ["station", "audience"]
    briefing = client.get_prompt("storm_briefing", {"station": "KSEA"})
    assert (
        briefing.messages[0].content.text == "Write a storm briefing for the public near Seattle."
    )


def test_the_weather_stations_written_for_the_official_sdk(tmp_path):
    logs = Logs()
    with Client.stdio(
        ported("weather_official_sdk.py", tmp_path), timeout=WAIT, on_log=logs.on_log
    ) as client:
        client.set_logging_level("info")
        assert client.server_info.name == "Weather Stations"
        check_weather(client, logs)


try:
    import mcp  # noqa: F401

    HAVE_SDK = True
except ImportError:
    HAVE_SDK = False


def sdk(value, name: str):
    """``value.name`` of an official SDK object: snake_case in mcp 2.x, camelCase in 1.x."""
    if hasattr(value, name):
        return getattr(value, name)
    first, *rest = name.split("_")
    return getattr(value, first + "".join(part.title() for part in rest))


@pytest.mark.skipif(not HAVE_SDK, reason="the official MCP Python SDK (`pip install mcp`)")
def test_the_official_sdks_client_uses_the_ported_weather_stations(tmp_path):
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = ported("weather_official_sdk.py", tmp_path)
    progress: list = []

    async def on_progress(done, total, message):
        progress.append((done, total, message))

    async def drive():
        # the whole environment: PYTHONPATH chooses the mcp_ref under test
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                with anyio.fail_after(WAIT):
                    init = await session.initialize()
                    assert sdk(init, "server_info").name == "Weather Stations"
                    tools = await session.list_tools()
                    assert len(tools.tools) == 6
                    reading = await session.call_tool("latest_reading", {"station": "KSEA"})
                    assert sdk(reading, "structured_content")["temperature_c"] == 11.5
                    forecast = await session.call_tool("forecast", {"station": "RJTT", "days": 3})
                    assert len(sdk(forecast, "structured_content")["days"]) == 3
                    swept = await session.call_tool(
                        "sweep", {"stations": ["EGLL"]}, progress_callback=on_progress
                    )
                    assert sdk(swept, "structured_content") == {"EGLL": 9.0}
                    badge = await session.call_tool("station_badge", {"station": "EGLL"})
                    assert badge.content[0].type == "image"
                    assert sdk(badge.content[0], "mime_type") == "image/png"
                    stations = await session.read_resource("weather://stations")
                    assert json.loads(stations.contents[0].text)["KSEA"] == "Seattle"
                    latest = await session.read_resource("weather://stations/EGLL/latest")
                    assert json.loads(latest.contents[0].text)["station"] == "EGLL"
                    prompt = await session.get_prompt("packing", {"destination": "Oslo"})
                    assert prompt.messages[0].content.text == (
                        "What should I pack for Oslo this week?"
                    )

    anyio.run(drive)
    assert progress == [(1, 1, "1 of 1")]


# -- FastMCP 2.x: the recipe box ------------------------------------------------------------------


def test_the_recipe_box_written_for_fastmcp_2(tmp_path):
    logs = Logs()

    def sampler(params):
        asked = params.messages[0].content.text
        return CreateMessageResult(
            role="assistant",
            content=TextContent(text=f"A frittata ({asked.split(': ')[1]})"),
            model="test-model",
            stop_reason="endTurn",
        )

    with Client.stdio(
        ported("recipes_fastmcp2.py", tmp_path),
        timeout=WAIT,
        on_log=logs.on_log,
        sampling_handler=sampler,
    ) as client:
        client.set_logging_level("info")
        assert (client.server_info.name, client.server_info.version) == ("Recipe Box", "1.2.0")
        assert [r.uri for r in client.list_resources()] == ["recipes://index"]
        templates = {t.uri_template: t for t in client.list_resource_templates()}
        assert sorted(templates) == [
            "recipes://{slug}",
            "recipes://{slug}/card",
            "recipes://{slug}/for/{servings}",
        ]
        assert templates["recipes://{slug}/card"].name == "recipe_card"
        assert templates["recipes://{slug}/card"].mime_type == "text/markdown"

        index = json.loads(client.read_resource("recipes://index").contents[0].text)
        assert index == [
            {"slug": "pancakes", "title": "Pancakes", "minutes": 20},
            {"slug": "omelette", "title": "Omelette", "minutes": 10},
        ]
        pancakes = json.loads(client.read_resource("recipes://pancakes").contents[0].text)
        assert pancakes["updated"] == "2026-02-14T18:00:00Z" and pancakes["serves"] == 4
        for_two = json.loads(client.read_resource("recipes://pancakes/for/2").contents[0].text)
        assert for_two["ingredients"][0] == {"name": "flour", "quantity": 100.0, "unit": "g"}
        card = client.read_resource("recipes://omelette/card").contents[0]
        assert card.mime_type == "text/markdown"
        assert card.text.splitlines()[:2] == ["# Omelette", "Serves 1, 10 minutes"]
        with pytest.raises(McpError):
            client.read_resource("recipes://waffles")  # the function raised: an error, not text

        prompts = {prompt.name: prompt for prompt in client.list_prompts()}
        assert prompts["cook_along"].description == "Walk me through a recipe, step by step."
        assert [(a.name, a.required) for a in prompts["menu_for"].arguments] == [
            ("guests", True),
            ("occasion", False),
        ]
        menu = client.get_prompt("menu_for", {"guests": "6"})  # prompt arguments are strings
        assert menu.messages[0].content.text == (
            "Plan a dinner for 6 guests using some of: Pancakes, Omelette."
        )
        steps = client.get_prompt("cook_along", {"slug": "pancakes"})
        assert "Pancakes for 4" in steps.messages[0].content.text

        scaled = client.call_tool("scale", {"slug": "omelette", "servings": 2}).structured_content
        assert scaled["serves"] == 2 and scaled["ingredients"][0]["quantity"] == 6.0
        refused = client.call_tool("scale", {"slug": "omelette", "servings": 0})
        assert refused.is_error and "servings" in text_of(refused)
        shopping = client.call_tool(
            "shopping_list", {"slugs": ["pancakes", "omelette"]}, on_progress=logs.on_progress
        )
        assert shopping.structured_content == {
            "butter": "10 g",
            "egg": "5 piece",
            "flour": "200 g",
            "milk": "300 ml",
        }
        logs.wait_for("Shopping for 2 recipes")
        assert logs.progress[-1][:2] == (2, 2)
        assert text_of(client.call_tool("suggest", {"ingredients": ["egg", "spinach"]})) == (
            "A frittata (egg, spinach)"
        )
        cooked = client.call_tool(
            "log_cooked", {"slug": "pancakes", "cooked_at": "2026-02-24T08:00:00+01:00"}
        ).structured_content
        assert cooked["days_since_update"] == 9
        assert datetime.fromisoformat(cooked["cooked_at"]) == datetime(
            2026, 2, 24, 7, 0, tzinfo=UTC
        )
