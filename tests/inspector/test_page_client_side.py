"""The client's side of the protocol on the inspector's page, in a real browser: the roots editor
(saved roots reach the server: roots/list_changed, then show_roots lists them), the log level and
the filtered log pane, and tasks (a tool run as a task, listed, its status and result) — over stdio
in both eras.
"""

from __future__ import annotations

import pytest
from browser import DEMO_COMMAND, Page, driver, inspect  # noqa: F401
from test_page_walk import ERAS, snap

pytestmark = pytest.mark.slow


def roots(page: Page, era: str, tmp_path) -> None:
    page.tab("client")
    page.click("#root-add")
    rows = page.all("#roots .root-row")
    rows[-1].find_element(page.By.CSS_SELECTOR, "input.uri").send_keys(tmp_path.as_uri())
    rows[-1].find_element(page.By.CSS_SELECTOR, "input.root-name").send_keys("work <b>here</b>")
    page.click("#roots-save")
    page.text_in("#roots-saved", "saved 1 root")
    if era == "handshake":
        # 2026-07-28 removes notifications/roots/list_changed (changelog 5): the roots go with the
        # next request that needs them (MRTR), so only the handshake era sends it.
        page.row("r.kind === 'message' && r.method === 'notifications/roots/list_changed'")
    page.call_tool("show_roots")
    page.result(f"work <b>here</b>: {tmp_path.as_uri()}")


def logs(page: Page, era: str) -> None:
    page.tab("client")
    from selenium.webdriver.support.ui import Select

    Select(page.css("#log-level")).select_by_visible_text("debug")
    if era == "handshake":
        # 2026-07-28 removes logging/setLevel: the level goes in each request's _meta (changelog 5)
        page.row("r.kind === 'message' && r.method === 'logging/setLevel'")
    page.call_tool("log_levels")
    page.result("sent: debug, info, warning, error")
    page.tab("client")
    page.text_in("#log-pane", "a debug message")
    page.text_in("#log-pane", "[demo]")
    Select(page.css("#log-filter-level")).select_by_visible_text("warning")
    page.until(lambda d: "a debug message" not in page.css("#log-pane").text)
    page.text_in("#log-pane", "a warning message")
    page.type("#log-filter-text", "error")
    page.until(lambda d: "a warning message" not in page.css("#log-pane").text)
    page.text_in("#log-pane", "a error message")
    snap(page, "client-log")


def tasks(page: Page) -> None:
    page.tab("tools")
    page.open_item("tool", "build_report")
    page.visible("#tool-task-label")
    page.type('#tool-fields [data-field="topic"] input', "bees")
    task_box = page.css("#tool-task")
    if not task_box.is_selected():
        task_box.click()
    page.click("#tool-call")
    page.result("A short report on bees")
    page.tab("client")
    page.click("#tasks-refresh")
    item = page.css("#tasks-list li[data-kind='task']")
    item.find_element(page.By.CSS_SELECTOR, "button.task-get").click()
    page.text_in("#task-result", "completed")
    item.find_element(page.By.CSS_SELECTOR, "button.task-result").click()
    page.text_in("#task-result", "A short report on bees")
    snap(page, "client-tasks")


@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_roots_logs_and_tasks_on_the_page(driver, era, tmp_path):
    with inspect(DEMO_COMMAND, "--era", era) as address:
        page = Page(driver, address)
        page.label = era
        page.connected(ERAS[era])
        roots(page, era, tmp_path)
        logs(page, era)
        tasks(page)
        # a tool added at run time: the list-changed event lists the tools again by itself
        page.call_tool("add_tool", name="added.tool")
        page.result("added added.tool")
        page.text_in("#tools-changed", "the server said its tools changed")
        page.open_item("tool", "added.tool")
        page.click("#tool-call")
        page.result("I am added.tool")
        # Clear forgets the records, here and in the inspector; new ones go on numbering
        last = page.driver.execute_script("return window.inspector.find(r => true).pop()")
        page.click("#clear")
        page.text_in("#row-count", "0 of 0 records")
        page.call_tool("echo", text="after")
        page.result("after")
        first = page.row("r.kind === 'message' && r.method === 'tools/call'")
        assert first > last
        assert (
            page.driver.execute_script(
                "return window.inspector.find(r => r.seq <= arguments[0]).length", last
            )
            == 0
        )
