"""10,000 messages stay responsive: the sequence diagram is virtualised.

A replayed file of 10,000 messages, and a live call sending 10,000 progress notifications: the
DOM holds at most a few hundred rows (only those in view, plus a margin), scrolling to the end
and opening the last message works, and the details show it.  benchmarks/inspector_load.py
measures the times (this test asserts no timing).
"""

from __future__ import annotations

import shlex

import pytest
from browser import DEMO_COMMAND, Page, driver, inspect, synthetic_conversation  # noqa: F401
from conftest import WAIT

pytestmark = pytest.mark.slow

#: The most rows the diagram may hold in the DOM at once (the view plus its margins).
MOST_ROWS = 300
#: The bound on 10,000 live notifications going through a server, the inspector and a browser:
#: more than one request's wait on a shared, loaded machine (a wait on the page, never a sleep).
SCALE_WAIT = 10 * WAIT


def rows_in_dom(page: Page) -> int:
    return page.driver.execute_script("return window.inspector.rowsInDom()")


def scroll_to_the_end_and_open_the_last(page: Page, last_seq: int) -> None:
    page.driver.execute_script(
        "const d = document.getElementById('diagram'); d.scrollTop = d.scrollHeight;"
    )
    row = page.css(f'#diagram .row[data-seq="{last_seq}"]')
    assert rows_in_dom(page) <= MOST_ROWS
    row.click()
    page.until(
        lambda d: page.css("#details").get_attribute("data-seq") == str(last_seq),
        "the last message never opened",
    )


def test_a_replay_of_10000_messages_keeps_a_few_hundred_rows_in_the_dom(driver, tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text(synthetic_conversation(10_000, dropped=7))
    with inspect(DEMO_COMMAND) as address:
        page = Page(driver, address)
        page.connected()
        page.css("#replay-file").send_keys(str(path))
        page.visible("#replay-banner")
        page.until(lambda d: d.execute_script("return window.inspector.records()") == 10_000)
        page.text_in("#row-count", "10000 of 10000 records")
        page.text_in("#dropped", "7 earlier records dropped")
        page.css('#diagram .row[data-seq="1"]')
        assert 0 < rows_in_dom(page) <= MOST_ROWS
        scroll_to_the_end_and_open_the_last(page, 10_000)
        page.text_in("#details-json", '"text": "message 9999"')
        page.text_in("#details-valid", "valid")
        # the keyboard walks it too, one row at a time
        page.css("#diagram").send_keys("\ue013")  # arrow up
        page.until(lambda d: page.css("#details").get_attribute("data-seq") == "9999")
        page.type("#filter-method", "result")
        page.text_in("#row-count", "5000 of 10000 records")
        assert rows_in_dom(page) <= MOST_ROWS


def test_10000_live_progress_notifications_keep_a_few_hundred_rows_in_the_dom(driver):
    with inspect(DEMO_COMMAND) as address:
        page = Page(driver, address)
        page.connected()
        page.call_tool("count_slowly", steps="10000", delay="0")
        page.result("counted to 10000", SCALE_WAIT)
        progress = "r.kind === 'message' && r.method === 'notifications/progress'"
        page.until(
            lambda d: (
                d.execute_script(f"return window.inspector.find(r => {progress}).length") == 10_000
            ),
            "the 10,000 progress notifications never all arrived",
            SCALE_WAIT,
        )
        assert rows_in_dom(page) <= MOST_ROWS
        last = page.driver.execute_script("return window.inspector.find(r => true).pop()")
        scroll_to_the_end_and_open_the_last(page, last)
        page.text_in("#details-title", "result")


def test_the_page_keeps_no_more_bytes_of_records_than_the_inspector_does(driver):
    """The page dropped records only past 50,000, whatever they weighed: a server's messages of
    a few MiB each filled the tab's memory (50,000 of them: 100 GB) while the inspector kept its
    256 MiB.  The state says the conversation's bounds and the page keeps no more than it: here
    1 MiB, with ten calls of 200 KB each way."""
    from inspector_harness import Inspector

    inspector = Inspector("--", *shlex.split(DEMO_COMMAND), max_bytes=1024 * 1024)
    try:
        page = Page(driver, inspector.url)
        page.connected()
        for call in range(10):
            arguments = {"text": "x" * 200_000}
            inspector.post("call", {"call": f"c{call}", "name": "echo", "arguments": arguments})
        last = inspector.conversation.last
        page.until(
            lambda d: d.execute_script("return window.inspector.find(r => true).pop()") == last,
            "the last record never reached the page",
        )
        kept = [record["seq"] for record in inspector.conversation.records(limit=10_000)]
        assert len(kept) < 15  # the inspector dropped most of them
        assert page.driver.execute_script("return window.inspector.find(r => true)") == kept
        page.text_in("#dropped", "earlier records dropped")
    finally:
        inspector.close()
