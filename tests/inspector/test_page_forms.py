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
