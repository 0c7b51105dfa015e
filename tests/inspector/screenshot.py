"""Make the README's picture of the inspector: ``python tests/inspector/screenshot.py docs/inspector.png``.

It serves the demo over HTTP (``mcp-ref serve-demo --http 127.0.0.1:0``), runs ``mcp-ref inspect``
on it, and drives headless Chromium (as the browser tests do, tests/inspector/browser.py): the
weather tool called through its form, its ``tools/call`` opened in the sequence diagram, scrolled
to its HTTP exchange; then the window is saved as a PNG at the path given.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]

from browser import Page, demo_http, inspect, new_driver  # noqa: E402


def take(path: Path) -> None:
    """Save the inspector's window, the demo's weather call opened, as the PNG ``path``."""
    driver = new_driver((1400, 1000))
    try:
        with demo_http() as url, inspect(url) as address:
            page = Page(driver, address)
            page.connected()
            page.call_tool("weather", city="Lisbon", unit="celsius")
            page.text_in("#tool-result .structured .check", "valid")
            seq = page.row(
                "r.kind === 'message' && r.type === 'request' && r.method === 'tools/call'"
            )
            page.open_row(seq)
            page.text_in("#details-transport .status-line", "200")
            driver.execute_script(
                "document.activeElement.blur();"
                "document.getElementById('details-transport').scrollIntoView({block: 'start'});"
            )
            driver.save_screenshot(str(path))
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/inspector/screenshot.py OUTPUT.png")
    take(Path(sys.argv[1]))
    print(f"saved {sys.argv[1]}")
