"""How the inspector's page copes with 10,000 messages, in a real (headless) Chromium.

Run it as ``python benchmarks/inspector_load.py`` (``--messages N`` to change the size); it prints
figures, it asserts nothing (tests/inspector/test_page_scale.py asserts what the page must do).
It needs what the browser tests need: selenium, Debian's chromium and chromium-driver.  It starts
``mcp-ref inspect`` on the demo server (with the mcp_ref of this checkout) and measures, in the page
(``performance.now()``, each figure up to the frame that shows the result):

* replay: a file of N messages loaded (read, parsed, indexed) and its first rows drawn;
* jump: the diagram scrolled from the top to the end, the last rows drawn;
* scroll: the diagram scrolled a screenful at a time, 50 times (the median frame);
* open: the last message clicked and its details (JSON, checks, transport) shown;
* filter: the method filter typed (all N records filtered again), the rows drawn;
* live: a tool call that sends N progress notifications, from the call to the last of them on the
  page (the server, the client, the inspector's record and event stream, the page's batching).

The rows in the DOM are counted after each step: the diagram is virtualised, so they stay a few
hundred however many records there are.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "inspector")]

from browser import DEMO_COMMAND, Page, inspect, new_driver, synthetic_conversation  # noqa: E402

LOAD = """
const [text, count, done] = arguments;
const t0 = performance.now();
const input = document.getElementById("replay-file");
const files = new DataTransfer();
files.items.add(new File([text], "benchmark.jsonl"));
input.files = files.files;
input.dispatchEvent(new Event("change"));
(function wait() {
  if (window.inspector.records() === count && document.querySelector("#diagram .row")) {
    requestAnimationFrame(() => done(performance.now() - t0));
  } else {
    setTimeout(wait, 1);
  }
})();
"""

JUMP = """
const done = arguments[arguments.length - 1];
const diagram = document.getElementById("diagram");
const t0 = performance.now();
diagram.scrollTop = diagram.scrollHeight;
requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
"""

SCROLL = """
const done = arguments[arguments.length - 1];
const diagram = document.getElementById("diagram");
diagram.scrollTop = 0;
const times = [];
let step = 0;
function next() {
  if (step++ === 50) { done(times); return; }
  const t0 = performance.now();
  diagram.scrollTop += diagram.clientHeight;
  requestAnimationFrame(() => requestAnimationFrame(() => { times.push(performance.now() - t0); next(); }));
}
requestAnimationFrame(next);
"""

OPEN = """
const [seq, done] = arguments;
const t0 = performance.now();
document.querySelector(`#diagram .row[data-seq="${seq}"]`).click();
requestAnimationFrame(() => done(document.getElementById("details").dataset.seq === String(seq) ? performance.now() - t0 : -1));
"""

FILTER = """
const [text, done] = arguments;
const field = document.getElementById("filter-method");
const t0 = performance.now();
field.value = text;
field.dispatchEvent(new Event("input"));
requestAnimationFrame(() => done(performance.now() - t0));
"""


def rows(page: Page) -> int:
    return page.driver.execute_script("return window.inspector.rowsInDom()")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    count = parser.parse_args().messages
    text = synthetic_conversation(count)
    driver = new_driver()
    try:
        with inspect(DEMO_COMMAND) as address:
            page = Page(driver, address)
            page.connected()
            print(f"{count} messages ({len(text) / 1e6:.1f} MB of JSON lines), headless Chromium")
            loaded = driver.execute_async_script(LOAD, text, count)
            print(
                f"replay: loaded and first rows drawn   {loaded:8.1f} ms   rows in DOM {rows(page)}"
            )
            jumped = driver.execute_async_script(JUMP)
            print(
                f"jump to the end, rows drawn          {jumped:8.1f} ms   rows in DOM {rows(page)}"
            )
            frames = driver.execute_async_script(SCROLL)
            print(
                f"scroll a screenful (50 times)        {statistics.median(frames):8.1f} ms median, "
                f"{max(frames):.1f} ms worst"
            )
            driver.execute_async_script(JUMP)
            opened = driver.execute_async_script(OPEN, count)
            print(f"open the last message                {opened:8.1f} ms")
            filtered = driver.execute_async_script(FILTER, "result")
            print(
                f"filter all records (method text)     {filtered:8.1f} ms   rows in DOM {rows(page)}"
            )
            driver.execute_async_script(FILTER, "")
            page.click("#replay-leave")

            started = time.perf_counter()
            page.call_tool("count_slowly", steps=str(count), delay="0")
            progress = "r.kind === 'message' && r.method === 'notifications/progress'"
            page.until(
                lambda d: (
                    d.execute_script(f"return window.inspector.find(r => {progress}).length")
                    >= count
                ),
                timeout=600,
            )
            live = time.perf_counter() - started
            print(
                f"live: {count} progress notifications on the page   {live * 1000:8.0f} ms "
                f"({count / live:.0f}/s)   rows in DOM {rows(page)}"
            )
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
