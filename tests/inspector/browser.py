"""The browser for the inspector's page tests: a headless Chromium driven by Selenium.

``driver`` (a pytest fixture) is a Selenium Chrome driver on Debian's ``/usr/bin/chromium`` and
``/usr/bin/chromedriver``, pointed at both explicitly so Selenium Manager never tries to download
anything.  Without either (or without selenium) the tests are skipped with the reason, except when
``CI`` is set: there a missing browser fails them.  Each test's window is saved at its end to
``tests/inspector/screenshots/<test name>.png`` (git-ignored), pass or fail.

``inspect(target, ...)`` runs ``mcp-ref inspect TARGET --no-browser --port 0`` as a subprocess
and yields the page's address (read from its stderr); ``demo_http()`` runs ``mcp-ref serve-demo
--http 127.0.0.1:0`` and yields its MCP endpoint.  ``Page`` holds the waits and clicks the tests
share; every wait is a WebDriverWait on a condition, bounded by ``WAIT``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import WAIT, watch_stderr

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("MCP_REF_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("MCP_REF_CHROMEDRIVER", "/usr/bin/chromedriver"))
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
#: The window the tests (and the README's screenshot) use.
WINDOW = (1500, 1000)
#: The page's address as ``mcp-ref inspect`` prints it: http://127.0.0.1:PORT/TOKEN/
ADDRESS = re.compile(r"(http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]+/)")


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.exists():
            return f"{path} is missing (apt-get install {package})"
    return None


def new_driver(window: tuple[int, int] = WINDOW):
    """A headless Chromium driver (the caller quits it); skips, or fails under CI, without one."""
    why = missing_browser()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests cannot run: {why}")
        pytest.skip(f"no browser: {why}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={window[0]},{window[1]}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    chrome.set_page_load_timeout(WAIT * 3)
    chrome.set_script_timeout(WAIT * 3)
    return chrome


@pytest.fixture
def driver(request) -> Iterator:
    """A fresh headless Chromium for one test; its window saved as a screenshot at the end."""
    chrome = new_driver()
    try:
        yield chrome
    finally:
        try:
            SCREENSHOTS.mkdir(exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
            chrome.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
        finally:
            chrome.quit()


class Lines:
    """The lines a subprocess writes to one pipe, readable with a bounded wait."""

    def __init__(self, pipe) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.all: list[str] = []
        threading.Thread(target=self._pump, args=(pipe,), daemon=True).start()

    def _pump(self, pipe) -> None:
        for line in iter(pipe.readline, ""):
            self.all.append(line)
            self.queue.put(line)
        self.queue.put(None)

    def wait_for(self, pattern: re.Pattern | str, timeout: float = 3 * WAIT) -> re.Match:
        """The first later line matching ``pattern``; fails when the process ends first."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matched {pattern!r}: {''.join(self.all)}") from None
            assert line is not None, f"the process ended: {''.join(self.all)}"
            found = re.search(pattern, line)
            if found:
                return found


def _environment() -> dict[str, str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    environment.pop("BROWSER", None)
    return environment


@contextlib.contextmanager
def running(label: str, command: list[str], announcing: re.Pattern | str) -> Iterator[re.Match]:
    """``command`` as a subprocess until the block ends (then stopped as Ctrl-C would); yields the
    match of the first stderr line matching ``announcing``."""
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = Lines(proc.stderr)
    unwatch = watch_stderr(label, lambda: list(lines.all))
    try:
        yield lines.wait_for(announcing)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(WAIT)
        unwatch()


@contextlib.contextmanager
def inspect(target: str, *options: str) -> Iterator[str]:
    """``mcp-ref inspect TARGET OPTIONS --no-browser --port 0``: yields the page's address."""
    command = [sys.executable, "-m", "mcp_ref", "inspect", target, *options]
    command += ["--no-browser", "--port", "0"]
    with running(f"mcp-ref inspect {target}", command, ADDRESS) as found:
        yield found.group(1)


@contextlib.contextmanager
def demo_http() -> Iterator[str]:
    """``mcp-ref serve-demo --http 127.0.0.1:0``: yields its MCP endpoint's URL."""
    command = [sys.executable, "-m", "mcp_ref", "serve-demo", "--http", "127.0.0.1:0"]
    with running("serve-demo --http", command, r"at (http://127\.0\.0\.1:\d+/mcp)") as found:
        yield found.group(1)


#: The demo server on stdio, as a TARGET for ``mcp-ref inspect`` (this very mcp_ref).
DEMO_COMMAND = f"{shlex.quote(sys.executable)} -m mcp_ref serve-demo"


class Page:
    """The inspector's page in ``driver``: the waits and gestures the tests share."""

    def __init__(self, driver, address: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver = driver
        self.address = address
        self.By = By
        self._wait = WebDriverWait
        #: What the screenshots of this page are named after (with the panel's name).
        self.label = ""
        driver.get(address)

    # -- waiting

    def until(self, condition, message: str = "", timeout: float = 3 * WAIT):
        """Wait (bounded) until ``condition(driver)`` is truthy; returns its value."""
        from selenium.common.exceptions import StaleElementReferenceException

        return self._wait(
            self.driver, timeout, ignored_exceptions=(StaleElementReferenceException,)
        ).until(condition, message)

    def css(self, selector: str):
        """The first element matching ``selector``, once there is one."""
        return self.until(
            lambda d: d.find_element(self.By.CSS_SELECTOR, selector),
            f"no element matches {selector}",
        )

    def all(self, selector: str) -> list:
        """Every element matching ``selector`` now."""
        return self.driver.find_elements(self.By.CSS_SELECTOR, selector)

    def visible(self, selector: str):
        """The first element matching ``selector``, once it is displayed."""

        def shown(d):
            for element in d.find_elements(self.By.CSS_SELECTOR, selector):
                if element.is_displayed():
                    return element
            return False

        return self.until(shown, f"nothing displayed matches {selector}")

    def text_in(self, selector: str, text: str, timeout: float = 3 * WAIT):
        """The element matching ``selector`` once its text holds ``text`` (within ``timeout``)."""

        def holds(d):
            for element in d.find_elements(self.By.CSS_SELECTOR, selector):
                if text in element.text:
                    return element
            return False

        return self.until(holds, f"{selector} never showed {text!r}", timeout)

    def connected(self, version: str | None = None) -> None:
        """Wait until the page says it is connected (to ``version``, when given)."""
        self.text_in("#status", f"connected · {version}" if version else "connected")

    # -- gestures

    def click(self, selector: str) -> None:
        """Click the displayed element matching ``selector`` once it is enabled."""
        element = self.until(
            lambda d: next(
                (
                    e
                    for e in d.find_elements(self.By.CSS_SELECTOR, selector)
                    if e.is_displayed() and e.is_enabled()
                ),
                False,
            ),
            f"nothing clickable matches {selector}",
        )
        element.click()

    def tab(self, name: str) -> None:
        """Open a panel: connection, tools, resources, prompts, client."""
        self.click(f"#tab-{name}")
        self.visible(f"#panel-{name}")

    def type(self, selector: str, text: str, clear: bool = True) -> None:
        """Type ``text`` into the displayed field matching ``selector``."""
        element = self.visible(selector)
        if clear:
            element.clear()
        element.send_keys(text)

    def open_item(self, kind: str, name: str) -> None:
        """Click the listed tool/resource/template/prompt called ``name`` (following "More" pages
        until it is listed)."""
        more = {"tool": "#tools-more", "resource": "#resources-more", "template": "#templates-more"}
        more_button = more.get(kind, "#prompts-more")
        item = f'li[data-kind="{kind}"][data-name="{name}"] .name'

        def listed_or_more(d):
            if d.find_elements(self.By.CSS_SELECTOR, item):
                return True
            for button in d.find_elements(self.By.CSS_SELECTOR, more_button):
                if button.is_displayed() and button.is_enabled():
                    button.click()
            return False

        self.until(listed_or_more, f"{kind} {name} is never listed")
        self.click(item)

    def field(self, container: str, name: str):
        """The input of the form field ``name`` inside ``container``."""
        return self.css(
            f'{container} [data-field="{name}"] input, '
            f'{container} [data-field="{name}"] select, '
            f'{container} [data-field="{name}"] textarea'
        )

    def call_tool(self, tool: str, /, **values: object) -> None:
        """Open ``tool``, fill its form with ``values`` (text typed, selects chosen), Call."""
        self.tab("tools")
        self.open_item("tool", tool)
        self.text_in("#tool-name", tool)
        for key, value in values.items():
            element = self.field("#tool-fields", key)
            if element.tag_name == "select":
                from selenium.webdriver.support.ui import Select

                Select(element).select_by_visible_text(str(value))
            elif element.get_attribute("type") == "checkbox":
                if element.is_selected() != bool(value):
                    element.click()
            else:
                element.clear()
                element.send_keys(str(value))
        self.click("#tool-call")

    def result(self, text: str, timeout: float = 3 * WAIT):
        """The tool's result once it holds ``text`` (within ``timeout``)."""
        return self.text_in("#tool-result", text, timeout)

    # -- the conversation

    def row(self, predicate_js: str):
        """Open the last record whose JS ``predicate_js`` (over ``r``) holds; its seq."""
        seq = self.until(
            lambda d: d.execute_script(
                f"const rs = window.inspector.find(r => {predicate_js}); return rs.length ? rs[rs.length - 1] : null;"
            ),
            f"no record matches {predicate_js}",
        )
        return seq

    def open_row(self, seq: int):
        """Scroll the diagram to record ``seq``, click its row; the details pane once it shows it."""
        self.driver.execute_script("window.inspector.reveal(arguments[0]);", seq)
        row = self.css(f'#diagram .row[data-seq="{seq}"]')
        row.click()
        self.until(
            lambda d: d.find_element(self.By.ID, "details").get_attribute("data-seq") == str(seq),
            f"the details never showed record {seq}",
        )
        return self.css("#details")

    def pwned(self) -> bool:
        """Whether a hostile script ran (it sets window.__pwned)."""
        return self.driver.execute_script("return typeof window.__pwned !== 'undefined';")

    def console_errors(self) -> list[str]:
        """The browser console's SEVERE entries (a CSP violation is one)."""
        return [
            entry["message"]
            for entry in self.driver.get_log("browser")
            if entry.get("level") == "SEVERE"
        ]


def synthetic_conversation(messages: int, dropped: int = 0) -> str:
    """An exported conversation (JSON lines, the header first) of ``messages`` message records:
    tools/call requests and their results, alternating, as the export writes them (``dropped``:
    the header says that many earlier records were dropped)."""
    import json

    lines = [
        json.dumps(
            {
                "kind": "header",
                "format": "mcp-ref-conversation",
                "version": 1,
                "target": "synthetic",
                "revision": "2025-11-25",
                "dropped": dropped,
            }
        )
    ]
    spec = {
        "title": "Tools — Calling Tools",
        "url": "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#calling-tools",
    }
    for seq in range(1, messages + 1):
        request_id = (seq + 1) // 2
        if seq % 2:
            message = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": f"message {seq}"}},
            }
            kind = dict(direction="send", type="request", label=f"tools/call #{request_id} echo")
        else:
            message = {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"content": [{"type": "text", "text": f"message {seq - 1}"}]},
            }
            kind = dict(direction="receive", type="result", label=f"#{request_id} result")
        record = {
            "seq": seq,
            "time": 1_700_000_000 + seq / 1000,
            "kind": "message",
            **kind,
            "message": message,
            "method": "tools/call",
            "id": request_id,
            "valid": True,
            "errors": [],
            "schema": "2025-11-25",
            "spec": spec,
            "exchange": None,
            "size": len(json.dumps(message)),
        }
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"
