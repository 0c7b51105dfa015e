"""The forms the inspector's page builds from JSON Schema, in a real browser, on
tests/servers/form_server.py over stdio: every shape filled in (defaults, required marks, an
integer, a number, booleans, an enum, a oneOf of consts, arrays of strings and of objects with
items added and removed, a nested object, a field of raw JSON) and the arguments the server got
are exactly those; the raw-JSON toggle; audio content; a URL-mode elicitation opened only on the
person's click.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest
from browser import Page, driver, inspect  # noqa: F401
from conftest import SERVERS
from selenium.webdriver.support.ui import Select
from test_page_walk import snap

pytestmark = pytest.mark.slow

FORMS = f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVERS / 'form_server.py'))}"
F = "#tool-fields"


def fill(page: Page, selector: str, text: str) -> None:
    element = page.visible(selector)
    element.clear()
    element.send_keys(text)


def got(page: Page) -> dict:
    page.text_in("#tool-status", "done")
    return json.loads(page.css("#tool-result .content-text pre").text)


def test_a_form_from_every_shape_of_schema(driver):
    with inspect(FORMS) as address:
        page = Page(driver, address)
        page.connected()
        page.tab("tools")
        page.open_item("tool", "shapes")
        for required in ("title", "colour"):
            page.css(f'{F} > [data-field="{required}"] .required-mark')
        assert not page.all(f'{F} > [data-field="ratio"] .required-mark')
        page.css(f'{F} [data-field="owner"] [data-field="name"] .required-mark')
        title = page.css(f'{F} [data-field="title"] input')
        assert title.get_attribute("value") == "untitled"  # the default
        assert page.css(f'{F} [data-field="count"] input').get_attribute("value") == "3"
        fill(page, f'{F} [data-field="title"] input', "Report")
        fill(page, f'{F} [data-field="count"] input', "5")
        fill(page, f'{F} [data-field="ratio"] input', "0.5")
        page.click(f'{F} [data-field="urgent"] input')
        Select(page.css(f'{F} [data-field="colour"] select')).select_by_visible_text("green")
        Select(page.css(f'{F} [data-field="size"] select')).select_by_visible_text("Large")
        for _ in range(3):
            page.click(f'{F} [data-field="tags"] button.add')
        tags = page.all(f'{F} [data-field="tags"] .array-item input')
        for element, text in zip(tags, ("a", "gone", "b"), strict=True):
            element.send_keys(text)
        page.all(f'{F} [data-field="tags"] .array-item button.remove')[1].click()
        page.click(f'{F} [data-field="points"] button.add')
        fill(page, f'{F} [data-field="points"] .array-item [data-field="x"] input', "1")
        fill(page, f'{F} [data-field="points"] .array-item [data-field="y"] input', "2")
        fill(page, f'{F} [data-field="owner"] [data-field="name"] input', "Ada")
        fill(page, f'{F} [data-field="address"] [data-field="city"] input', "Paris")
        fill(page, f'{F} [data-field="extra"] textarea', '{"k": [1, null]}')
        snap(page, "tools-form")
        page.click("#tool-call")
        assert got(page) == {
            "title": "Report",
            "colour": "green",
            "count": 5,
            "ratio": 0.5,
            "urgent": True,
            "size": "l",
            "tags": ["a", "b"],
            "points": [{"x": 1, "y": 2}],
            "owner": {"name": "Ada", "address": {"city": "Paris"}},
            "extra": {"k": [1, None]},
        }

        # the raw JSON toggle: the form's values as JSON, edited, sent as they are
        page.click("#tool-raw-toggle")
        raw = page.visible("#tool-raw")
        assert json.loads(raw.get_attribute("value"))["owner"] == {
            "name": "Ada",
            "address": {"city": "Paris"},
        }
        raw.clear()
        raw.send_keys('{"title": "raw", "colour": "red", "tags": []}')
        page.click("#tool-call")
        assert got(page) == {"title": "raw", "colour": "red", "tags": []}
        # and back: the form takes the JSON's values
        page.click("#tool-raw-toggle")
        assert page.css(f'{F} [data-field="title"] input').get_attribute("value") == "raw"


def test_audio_and_a_url_elicitation_opened_on_click(driver):
    with inspect(FORMS, "--era", "handshake") as address:
        page = Page(driver, address)
        page.connected()
        page.call_tool("beep")
        audio = page.css("#tool-result .content-audio audio")
        assert audio.get_attribute("src").startswith("data:audio/wav;base64,UklGR")
        page.call_tool("visit")
        page.tab("client")
        card = '.ask[data-mode="url"]'
        page.text_in(f"{card} .url", "https://example.com/sign-in?session=1")
        page.text_in(f"{card} .ask-message", "Please sign in")
        assert len(driver.window_handles) == 1  # nothing opened before the click
        page.click(f"{card} button.open")
        page.until(lambda d: len(d.window_handles) == 2, "Open opened no window")
        page.click(f"{card} button.accept")
        page.tab("tools")
        page.result("visited: accept")


def test_fields_named_as_object_prototype_members_are_sent_read_and_expanded(driver):
    """A field named ``__proto__`` was dropped from the arguments (the page built them in a plain
    ``{}``, where assigning ``__proto__`` sets the prototype), at the top and in a nested object,
    in a tool's form and in a prompt's; an empty template variable named ``constructor`` expanded
    to Object's source.  Now each such name is a key like any other: sent, set from the raw JSON,
    and left out when empty."""
    names = ("__proto__", "constructor", "toString", "hasOwnProperty")
    with inspect(FORMS) as address:
        page = Page(driver, address)
        page.connected()
        page.tab("tools")
        page.open_item("tool", "proto")
        for name in names:
            fill(page, f'{F} > [data-field="{name}"] input', f"top {name}")
            fill(page, f'{F} [data-field="nested"] [data-field="{name}"] input', f"in {name}")
        page.click("#tool-call")
        sent = {name: f"top {name}" for name in names}
        sent["nested"] = {name: f"in {name}" for name in names}
        assert got(page) == sent
        # the raw JSON holds them all, and back in the form, what it lacks is empty
        page.click("#tool-raw-toggle")
        raw = page.visible("#tool-raw")
        assert json.loads(raw.get_attribute("value")) == sent
        raw.clear()
        raw.send_keys('{"__proto__": "raw"}')
        page.click("#tool-raw-toggle")
        assert page.css(f'{F} > [data-field="__proto__"] input').get_attribute("value") == "raw"
        assert page.css(f'{F} > [data-field="constructor"] input').get_attribute("value") == ""
        page.click("#tool-call")
        assert got(page) == {"__proto__": "raw"}

        page.tab("prompts")
        page.open_item("prompt", "proto")
        fill(page, '#prompt-fields [data-field="__proto__"] input', "p")
        fill(page, '#prompt-fields [data-field="constructor"] input', "c")
        page.click("#prompt-get")
        page.text_in("#prompt-messages", '{"__proto__": "p", "constructor": "c"}')

        page.tab("resources")
        page.open_item("template", "proto")
        page.text_in("#template-name", "proto")
        assert page.css("#template-expanded").text == "proto://"
        fill(page, '#template-fields [data-field="constructor"] input', "x")
        page.text_in("#template-expanded", "proto://x")
