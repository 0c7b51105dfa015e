"""A hostile server's markup stays text on the inspector's page.

tests/servers/hostile_server.py puts ``<img onerror>``, ``<script>``, ``<style>`` and
``javascript:`` links in every string it sends (names, titles, descriptions, schemas, results,
progress, log and elicitation messages, resources, prompts, completions, stderr).  The page is
walked through all of it; then no element the markup names exists, ``window.__pwned`` (which each
piece would set) is undefined, no link or source points at ``javascript:``, the console shows no
Content-Security-Policy violation (the page never even tried to run it), and the markup is visible
as text.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest
import requests
from browser import SCREENSHOTS, Page, driver, inspect  # noqa: F401
from conftest import SERVERS, WAIT

pytestmark = pytest.mark.slow

HOSTILE = f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVERS / 'hostile_server.py'))}"
EVIL = '<img src=x id="pwned-img" onerror="window.__pwned=1">'  # as hostile_server.py's
NAMED = ["pwned-img", "pwned-script", "pwned-link", "pwned-style", "pwned-name"]


def assert_harmless(page: Page) -> None:
    """Nothing of the markup became an element, ran, or became a link."""
    for element_id in NAMED:
        assert not page.all(f"#{element_id}"), f"#{element_id} became an element"
    assert not page.pwned(), "a hostile script ran"
    assert not page.all('[href^="javascript:" i], [src^="javascript:" i]')
    assert not page.all('img[src="x"]')
    scripts = [s.get_attribute("src") for s in page.all("script")]
    assert len(scripts) == 1 and scripts[0].endswith("/static/inspector.js")
    assert len(page.all("style")) == 0
    assert page.driver.execute_script("return getComputedStyle(document.body).display") != "none"


def test_the_page_opens_no_url_that_is_not_http_even_one_the_client_let_through(
    driver, monkeypatch
):
    """Defence in depth: the client refuses a URL-mode elicitation whose URL is not ``http`` or
    ``https`` (-32602, above), so the page's own guard is never reached through it.  With the
    client's check let through here (an inspector served in this process, a real page on a real
    socket), the hostile server's ``javascript:`` URL reaches the page: it is shown as text, its
    *Open* button is disabled and says why, a click on it opens nothing, nothing runs, and the
    request can still be answered."""
    from inspector_harness import Inspector

    from mcp_ref.client import answering

    monkeypatch.setattr(answering, "is_web_url", lambda url: True)
    inspector = Inspector(
        "--era", "handshake", "--", sys.executable, str(SERVERS / "hostile_server.py")
    )
    try:
        page = Page(driver, inspector.url)
        page.connected()
        driver.execute_script(
            "window.__opened = []; window.open = (...args) => { window.__opened.push(args); };"
        )
        page.call_tool("visit")
        page.tab("client")
        page.text_in(".ask .url", "javascript:window.__pwned=6")
        opener = page.css(".ask button.open")
        assert opener.text == "Not an http(s) URL: not opened"
        assert not opener.is_enabled()
        driver.execute_script("arguments[0].click()", opener)  # a click that reaches it anyway
        assert driver.execute_script("return window.__opened") == []
        assert_harmless(page)
        page.click(".ask button.decline")
        page.tab("tools")
        page.result("visited: decline")
    finally:
        inspector.close()


def test_a_hostile_servers_markup_stays_text(driver, tmp_path):
    with inspect(HOSTILE, "--era", "handshake") as address:
        page = Page(driver, address)
        page.connected()
        page.text_in("#fact-server", "<img src=x")
        page.text_in("#fact-instructions", "<script id=")
        assert driver.title.startswith("hostile<img src=x")  # the title is text too

        page.tab("tools")
        page.text_in("#tools-list", '<img src=x id="pwned-name"')  # the hostile tool name
        page.text_in("#tools-list", "Shouts <img")
        page.call_tool("shout")
        words = page.field("#tool-fields", "words").get_attribute("value")
        assert words.startswith("default <img src=x")  # the default, as a value
        page.result('said default <img src=x id="pwned-img" onerror="window.__pwned=1">')
        page.result("<script")
        page.text_in("#tool-result .content-resource_link", "javascript:window.__pwned=5")
        page.text_in("#tool-result .content-image", "not shown: image of type text/html")
        page.text_in("#tool-result .content-resource", "embedded <img")
        page.text_in("#tool-result .structured", "<a id=")
        assert_harmless(page)

        page.call_tool("fail")
        page.result("failed <img src=x")
        page.call_tool("noisy")
        page.result("noisy <img")
        page.text_in("#tool-progress-text", "done <img src=x")

        page.call_tool("ask")
        page.tab("client")
        page.text_in(".ask .ask-message", "Tell me <img src=x")
        page.text_in(".ask", "Answer <img src=x")
        page.field(".ask", "answer").send_keys("fine")
        page.click(".ask button.accept")
        page.tab("tools")
        page.result("asked: accept")

        # A javascript: URL never reaches the page: the client refuses the elicitation (-32602)
        # before any handler sees it, and the server's tool fails with that refusal.
        page.call_tool("visit")
        page.text_in("#tool-error", "a URL-mode elicitation needs a url, an http or https URL")
        assert not page.all(".ask")
        page.call_tool("visit_page")
        page.tab("client")
        page.text_in(".ask .ask-message", "Visit <img src=x")
        page.text_in(".ask .url", '"><img/src=x/id="pwned-url"')
        page.click(".ask button.decline")
        page.tab("tools")
        page.result("visited: decline")

        page.tab("client")
        page.text_in("#log-pane", "log <img src=x")

        page.tab("resources")
        page.text_in("#resources-list", "page <img src=x")
        page.open_item("resource", "hostile://page")
        page.text_in("#resource-contents", "<html><img src=x")
        page.text_in("#templates-list", "item <img")

        page.tab("prompts")
        page.text_in("#prompts-list", "Prompts <img")
        page.open_item("prompt", "hello")
        page.type('#prompt-fields [data-field="who"] input', "x")
        page.text_in('#prompt-fields [data-field="who"] .suggestions', "<script id=")
        page.click("#prompt-get")
        page.text_in("#prompt-messages .role-assistant", "reply <img src=x")

        seq = page.row("r.kind === 'stderr'")
        page.open_row(seq)
        page.text_in("#details-json", "starting <img")
        page.text_in("#conversation", "stderr: starting <img src=x")
        assert_harmless(page)
        csp = [m for m in page.console_errors() if "Content Security Policy" in m]
        assert not csp, csp
        # replayed, the hostile conversation stays text too
        exported = requests.get(page.css("#export-jsonl").get_attribute("href"), timeout=WAIT)
        lines = exported.text.splitlines()
        # a spec link the page would not follow: not the specification's own site
        forged = json.loads(lines[-1])
        forged.update(kind="message", spec={"title": EVIL, "url": "https://evil.example/x"})
        forged["seq"] += 1
        path = tmp_path / "hostile.jsonl"
        path.write_text("\n".join([*lines, json.dumps(forged)]) + "\n")
        page.css("#replay-file").send_keys(str(path))
        page.visible("#replay-banner")
        page.open_row(forged["seq"])
        assert not page.css("#details-spec").is_displayed()
        page.open_row(page.row("r.kind === 'stderr'"))
        page.text_in("#details-json", "starting <img")
        assert_harmless(page)
        page.click("#replay-leave")
        SCREENSHOTS.mkdir(exist_ok=True)
        page.tab("tools")
        page.open_item("tool", "shout")
        page.click("#tool-call")
        page.result("said default")
        driver.save_screenshot(str(SCREENSHOTS / "hostile.png"))


FLOODING_LISTS = (
    f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVERS / 'flooding_lists_server.py'))}"
)

#: The seqs of the requests of METHOD (arguments[0]) the page sent, once the last one followed the
#: last notification NOTIFICATION (arguments[1]) and every one was answered; else null.
SETTLED_REQUESTS = """
const [method, notification] = arguments;
const messages = (type, name) => window.inspector.find(
  (r) => r.kind === "message" && r.type === type && r.method === name);
const sent = messages("request", method);
const answered = messages("result", method);
const told = messages("notification", notification);
const settled = told.length === 200 && answered.length === sent.length
  && sent[sent.length - 1] > told[told.length - 1];
return settled ? sent.filter((seq) => seq > told[0]) : null;
"""


def requests_after_the_flood(page: Page, method: str, notification: str) -> list[int]:
    """The ``method`` requests the page sent after the first of 200 ``notification``s, once they
    are all answered and the last of them came after the last notification."""
    return page.until(
        lambda d: d.execute_script(SETTLED_REQUESTS, method, notification),
        f"the page never listed again after the {notification} flood",
    )


def test_a_flood_of_changes_makes_the_page_list_and_read_again_a_few_times_not_once_each(driver):
    """200 ``tools/list_changed`` at once: a handful of ``tools/list`` (one in flight and one
    more after it), not 200; the same for 200 ``resources/updated`` of the resource on show."""
    with inspect(FLOODING_LISTS, "--era", "handshake") as address:
        page = Page(driver, address)
        page.connected()
        page.call_tool("flood_lists")
        page.result("sent 200")
        again = requests_after_the_flood(page, "tools/list", "notifications/tools/list_changed")
        assert 1 <= len(again) <= 3, f"{len(again)} listings for 200 notifications"
        page.text_in("#tools-list", "flood_updates")  # listed again, whole
        page.tab("resources")
        page.click('li[data-uri="flood://r"] button.subscribe')
        page.text_in('li[data-uri="flood://r"] button.subscribe', "Unsubscribe")
        page.open_item("resource", "flood://r")
        page.text_in("#resource-uri", "flood://r")
        page.call_tool("flood_updates")
        page.result("sent 200")
        again = requests_after_the_flood(page, "resources/read", "notifications/resources/updated")
        assert 1 <= len(again) <= 3, f"{len(again)} reads for 200 notifications"
