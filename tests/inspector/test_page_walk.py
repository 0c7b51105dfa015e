"""The inspector's page in a real browser, on the demo server over stdio and over HTTP, in both
eras: ``mcp-ref inspect`` runs as a subprocess, headless Chromium drives the page.

One walk per (transport, era): a tool called through its form (echo, add), progress watched
(count_slowly), a call cancelled (wait_for_cancel), an elicitation (ask_user) and a sampling request
(ask_llm) answered on the page, demo://counter subscribed and its update seen (bump_counter), a
prompt got with completion (greet: typing "A" suggests names), a message opened in the sequence
diagram (marked valid, with its spec link), over HTTP its exchange (status, headers, the Mcp-*
headers marked), and the conversation exported and loaded back (replay).  Then: reconnecting in the
other era and retrying a failed connect; a schema-breaking server's invalid message; the 2024-11-05
HTTP+SSE transport.  Each step saves a screenshot of its panel to tests/inspector/screenshots/.
"""

from __future__ import annotations

import shlex
import sys

import pytest
import requests
from browser import DEMO_COMMAND, SCREENSHOTS, Page, demo_http, driver, inspect  # noqa: F401
from conftest import SERVERS, WAIT

pytestmark = pytest.mark.slow

ERAS = {"modern": "2026-07-28", "handshake": "2025-11-25"}


def snap(page: Page, name: str) -> None:
    """Save the window as tests/inspector/screenshots/LABEL-NAME.png (LABEL: the page's)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    label = f"{page.label}-" if page.label else ""
    page.driver.save_screenshot(str(SCREENSHOTS / f"{label}{name}.png"))


def connection(page: Page, era: str, transport: str) -> None:
    page.connected(ERAS[era])
    page.tab("connection")
    page.text_in("#fact-era", era)
    page.text_in("#fact-transport", transport)
    page.text_in("#fact-server", "mcp-ref-demo")
    assert page.driver.title == "mcp-ref-demo · mcp-ref inspect"
    page.text_in("#fact-instructions", "Start with the echo tool")
    page.text_in("#server-capabilities", '"tools"')
    page.text_in("#client-capabilities", '"elicitation"')


def tools(page: Page) -> None:
    page.call_tool("echo", text="hello <b>there</b>")
    page.result("hello <b>there</b>")  # shown as text, markup and all
    page.call_tool("add", a="2", b="3.5")
    page.result("5.5")
    page.call_tool("weather", city="Paris", unit="fahrenheit")
    page.text_in("#tool-result .structured .check.valid", "valid against the tool's outputSchema")
    page.text_in("#tool-result .structured", "70.7")
    page.call_tool("divide", a="1", b="0")
    page.text_in("#tool-result.is-error .is-error-mark", "isError: true")
    page.result("Cannot divide by zero")
    page.call_tool("pixel")
    image = page.css("#tool-result .content-image img")
    assert image.get_attribute("src").startswith("data:image/png;base64,")
    page.until(lambda d: d.execute_script("return arguments[0].naturalWidth", image) == 1)


def progress(page: Page) -> None:
    page.call_tool("count_slowly", steps="5")
    page.text_in("#tool-progress-text", "5 of 5 — step 5 of 5")
    page.result("counted to 5")
    bar = page.css("#tool-progress")
    assert bar.get_attribute("value") == "5" and bar.get_attribute("max") == "5"
    snap(page, "tools-progress")


def cancel(page: Page, notified: bool) -> None:
    page.call_tool("wait_for_cancel", seconds="60")
    page.text_in("#tool-status", "calling")
    page.click("#tool-cancel")
    page.text_in("#tool-status", "cancelled")
    if notified:
        page.row("r.kind === 'message' && r.method === 'notifications/cancelled'")
    # 2026-07-28 basic/transports/streamable-http: "closing the SSE response stream is itself the
    # cancellation": no notifications/cancelled there.


def elicitation(page: Page) -> None:
    page.call_tool("ask_user")
    page.click("#ask-banner")  # it opens the Client side
    page.visible("#panel-client")
    card = '.ask[data-kind="elicitation"]'
    page.text_in(f"{card} .ask-message", "Who are you?")
    page.field(card, "name").send_keys("Ada")
    assert page.field(card, "colour").get_attribute("value") != ""  # the default, chosen
    snap(page, "client-elicitation")
    page.click(f"{card} button.accept")
    page.until(lambda d: not page.all(card), "the elicitation stayed after its answer")
    page.tab("tools")
    page.result("hello Ada, who likes blue")


def sampling(page: Page) -> None:
    page.call_tool("ask_llm", question="What is MCP?")
    page.tab("client")
    card = '.ask[data-kind="sampling"]'
    page.text_in(card, "What is MCP?")
    page.text_in(card, "Answer briefly.")  # the system prompt
    page.text_in(card, "maxTokens: 100")
    page.type(f"{card} textarea.reply", "A protocol.")
    snap(page, "client-sampling")
    page.click(f"{card} button.approve")
    page.until(lambda d: not page.all(card), "the sampling request stayed after its answer")
    page.tab("tools")
    page.result("mcp-ref-inspector says: A protocol.")


def subscription(page: Page) -> None:
    page.tab("resources")
    page.open_item("resource", "demo://counter")
    page.text_in("#resource-contents", "0")
    page.click('li[data-uri="demo://counter"] button.subscribe')
    page.text_in('li[data-uri="demo://counter"] button.subscribe', "Unsubscribe")
    page.call_tool("bump_counter")
    page.result("1")
    page.tab("resources")
    page.css('#resource-updates li[data-uri="demo://counter"]')
    page.text_in("#resource-contents", "1")  # read again on the update
    snap(page, "resources-subscribed")


def template(page: Page) -> None:
    page.tab("resources")
    page.open_item("template", "greeting")
    page.type('#template-fields [data-field="name"] input', "Gr")
    page.click("#template-fields .suggestions button")  # Grace, the one name starting "Gr"
    page.text_in("#template-expanded", "demo://greeting/Grace")
    page.click("#template-read")
    page.text_in("#resource-contents", "Hello, Grace!")


def prompt(page: Page) -> None:
    page.tab("prompts")
    page.open_item("prompt", "greet")
    page.css('#prompt-fields [data-field="name"] .required-mark')
    page.type('#prompt-fields [data-field="name"] input', "A")
    suggestions = '#prompt-fields [data-field="name"] .suggestions'
    for name in ("Ada", "Alan", "Alonzo"):
        page.text_in(suggestions, name)
    assert "Grace" not in page.css(suggestions).text
    snap(page, "prompts-completion")
    page.click(f"{suggestions} button")
    page.click("#prompt-get")
    page.text_in("#prompt-messages .message.role-user", "Hey Ada!")


def diagram(page: Page, http: bool, era: str) -> None:
    seq = page.row("r.kind === 'message' && r.type === 'request' && r.method === 'tools/call'")
    details = page.open_row(seq)
    page.text_in("#details-title", "tools/call")
    page.text_in("#details-valid", "✓ valid")
    spec = page.css("#details-spec")
    assert spec.get_attribute("href").startswith("https://modelcontextprotocol.io/specification/")
    assert spec.get_attribute("target") == "_blank"
    assert set(spec.get_attribute("rel").split()) >= {"noopener", "noreferrer"}
    page.text_in("#details-json", '"method": "tools/call"')
    if http:
        page.text_in("#details-transport .request-line", "POST http://127.0.0.1:")
        page.text_in("#details-transport .status-line", "200")
        page.text_in("#details-transport .headers", "Content-Type")
        page.css("#details-transport .http-request .headers tr.mcp")  # MCP-Protocol-Version &c.
        chip = page.css(f'#diagram .row[data-seq="{seq}"] .chip')
        assert chip.text == "200"
        # a call answered as an event stream: its events, with their ids, under the request
        streamed = page.row(
            "r.kind === 'message' && r.type === 'request' && r.method === 'tools/call'"
            " && r.message.params.name === 'count_slowly'"
        )
        page.open_row(streamed)
        page.text_in("#details-transport .http-response", "text/event-stream")
        page.text_in("#details-transport .sse-event", "notifications/progress")
        # the handshake era's server numbers its events (for resumption); 2026-07-28 has no
        # resumption, and its events no ids
        page.text_in("#details-transport .sse-event", "id: " if era == "handshake" else "(no id)")
        snap(page, "conversation-http-sse")
    else:
        page.text_in("#details-transport h4", "Server stderr")
    assert details.is_displayed()
    snap(page, "conversation-details")


def replay(page: Page, tmp_path) -> None:
    link = page.css("#export-jsonl").get_attribute("href")
    exported = requests.get(link, timeout=WAIT)
    assert exported.status_code == 200
    lines = [line for line in exported.text.splitlines() if line.strip()]
    assert '"mcp-ref-conversation"' in lines[0]
    mermaid = requests.get(page.css("#export-md").get_attribute("href"), timeout=WAIT)
    assert mermaid.status_code == 200 and "sequenceDiagram" in mermaid.text
    path = tmp_path / "conversation.jsonl"
    path.write_text(exported.text)
    page.css("#replay-file").send_keys(str(path))
    page.visible("#replay-banner")
    page.text_in("#status", "replay")
    assert not page.css("#clear").is_enabled()  # Clear is the live conversation's
    count = page.driver.execute_script("return window.inspector.records()")
    assert count == len(lines) - 1
    seq = page.row("r.kind === 'message' && r.method === 'tools/call' && r.type === 'request'")
    page.open_row(seq)
    page.text_in("#details-valid", "valid")
    snap(page, "conversation-replay")
    page.click("#replay-leave")
    page.until(lambda d: not page.css("#replay-banner").is_displayed())


def walk(page: Page, era: str, transport: str, tmp_path) -> None:
    page.label = f"{transport}-{era}"
    connection(page, era, transport)
    snap(page, "connection")
    tools(page)
    progress(page)
    cancel(page, notified=transport == "stdio" or era == "handshake")
    elicitation(page)
    sampling(page)
    subscription(page)
    template(page)
    prompt(page)
    diagram(page, http=transport != "stdio", era=era)
    replay(page, tmp_path)


@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_the_page_walks_the_demo_over_stdio(driver, era, tmp_path):
    with inspect(DEMO_COMMAND, "--era", era) as address:
        walk(Page(driver, address), era, "stdio", tmp_path)


@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_the_page_walks_the_demo_over_http(driver, era, tmp_path):
    with demo_http() as url, inspect(url, "--era", era) as address:
        walk(Page(driver, address), era, "streamable", tmp_path)


def test_reconnecting_in_the_other_era_and_retrying_after_a_failure(driver, tmp_path):
    with inspect(DEMO_COMMAND, "--era", "modern") as address:
        page = Page(driver, address)
        page.connected(ERAS["modern"])
        page.click("#reconnect-other")
        page.connected(ERAS["handshake"])
        page.text_in("#fact-era", "handshake")
        page.row("r.kind === 'message' && r.method === 'initialize'")
        page.click("#reconnect-other")
        page.connected(ERAS["modern"])
        # Reconnect in the same era (a server launched again, maybe edited): listed again
        last = page.driver.execute_script("return window.inspector.find(r => true).pop()")
        page.click("#reconnect")
        page.row(f"r.seq > {last} && r.kind === 'message' && r.method === 'server/discover'")
        page.connected(ERAS["modern"])
        page.row(f"r.seq > {last} && r.kind === 'message' && r.method === 'tools/list'")
    missing = tmp_path / "no_such_server.py"
    with inspect(f"python {missing}") as address:
        page = Page(driver, address)
        page.visible("#connection-error")
        page.text_in("#status", "not connected")
        snap(page, "connection-error")
        page.click("#retry")
        page.visible("#connection-error")


def test_an_invalid_message_is_marked_with_its_errors(driver):
    """tests/servers/schema_breaking_server.py lists a tool whose inputSchema is not an object
    schema: its tools/list result is marked ✗ in the diagram, and opened shows why."""
    breaker = (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVERS / 'schema_breaking_server.py'))}"
    )
    with inspect(breaker, "--era", "handshake") as address:
        page = Page(driver, address)
        page.connected("2025-11-25")
        seq = page.row("r.kind === 'message' && r.type === 'result' && r.method === 'tools/list'")
        page.css(f'#diagram .row[data-seq="{seq}"] .invalid-mark')
        page.open_row(seq)
        page.text_in("#details-valid", "✗ invalid (schema 2025-11-25)")
        page.text_in("#details-errors", "inputSchema")
        page.tab("tools")
        page.text_in("#tools-list", "bad tool!")  # listed all the same
        snap(page, "conversation-invalid")


def test_the_page_over_the_http_sse_transport(driver):
    """The 2024-11-05 HTTP+SSE transport: a call POSTed (202 Accepted), its answer an event of the
    GET stream, each shown under its message."""
    with demo_http() as url, inspect(url.replace("/mcp", "/sse"), "--transport", "sse") as address:
        page = Page(driver, address)
        page.label = "http-sse"
        page.connected()
        page.text_in("#fact-transport", "sse")
        page.call_tool("echo", text="over SSE")
        page.result("over SSE")
        sent = page.row("r.kind === 'message' && r.method === 'tools/call' && r.type === 'request'")
        page.open_row(sent)
        page.text_in("#details-transport .status-line", "202")
        answer = page.row(
            "r.kind === 'message' && r.method === 'tools/call' && r.type === 'result'"
        )
        page.open_row(answer)
        page.text_in("#details-transport .sse-event", "over SSE")
        snap(page, "conversation")


def test_after_a_reconnect_each_message_shows_its_own_exchange(driver):
    """A new connection numbers its HTTP exchanges from 1 again: the handshake era's initialize
    (its exchange #1) shows its own request, not the modern era's first one too."""
    with demo_http() as url, inspect(url, "--era", "modern") as address:
        page = Page(driver, address)
        page.connected(ERAS["modern"])
        page.row("r.kind === 'http' && r.phase === 'response' && r.exchange === 1")
        page.click("#reconnect-other")
        page.connected(ERAS["handshake"])
        seq = page.row("r.kind === 'message' && r.method === 'initialize' && r.type === 'request'")
        page.open_row(seq)
        page.text_in("#details-transport .http-request", '"method": "initialize"')
        assert len(page.all("#details-transport .http-request")) == 1
        assert "server/discover" not in page.css("#details-transport").text


#: A handshake stdio server with two subscribable resources, res://a and res://b ("a v0", ...):
#: tool ``bump`` {uri} makes a new version and says so (resources/updated); a read of res://a
#: past its first version is answered only once tool ``release`` is called.
HELD_READ_SERVER = """
import json, sys, threading
lock = threading.Lock()
versions = {"res://a": 0, "res://b": 0}
released = threading.Event()

def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

def read(request_id, uri):
    text = f"{uri[-1]} v{versions[uri]}"
    if uri == "res://a" and versions[uri] > 0:
        released.wait(60)
    contents = [{"uri": uri, "mimeType": "text/plain", "text": text}]
    send({"jsonrpc": "2.0", "id": request_id, "result": {"contents": contents}})

def result_of(method, params):
    if method == "initialize":
        capabilities = {"tools": {}, "resources": {"subscribe": True}}
        info = {"name": "held-read", "version": "1"}
        return {"protocolVersion": "2025-11-25", "capabilities": capabilities, "serverInfo": info}
    if method == "resources/list":
        return {"resources": [{"uri": uri, "name": uri} for uri in versions]}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "tools/list":
        uri = {"type": "object", "properties": {"uri": {"type": "string"}}}
        return {"tools": [{"name": "bump", "inputSchema": uri},
                          {"name": "release", "inputSchema": {"type": "object"}}]}
    if method == "tools/call" and params["name"] == "bump":
        uri = params["arguments"]["uri"]
        versions[uri] += 1
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
        return {"content": [{"type": "text", "text": f"{uri} v{versions[uri]}"}]}
    if method == "tools/call":
        released.set()
        return {"content": [{"type": "text", "text": "released"}]}
    return {}

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "resources/read":
        args = (message["id"], message["params"]["uri"])
        threading.Thread(target=read, args=args, daemon=True).start()
    else:
        result = result_of(message["method"], message.get("params") or {})
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"""


def test_an_update_of_the_resource_shown_while_another_is_read_again_is_read_again(
    driver, tmp_path
):
    """Resource A on show is updated: it is read again, and that read takes long.  The user opens
    resource B, and B is updated.  B's read again waited for A's, and was then dropped, because A
    was no longer on show: B stayed at its old version.  Now the read asked for meanwhile is of
    the resource on show when the running one ends: B's newest version is shown."""
    (tmp_path / "held_read.py").write_text(HELD_READ_SERVER)
    server = shlex.join([sys.executable, str(tmp_path / "held_read.py")])
    with inspect(server, "--era", "handshake") as address:
        page = Page(driver, address)
        origin = {"Origin": address.split("/", 3)[0] + "//" + address.split("/", 3)[2]}

        def call(name: str, **arguments: str) -> None:
            body = {"call": f"{name}-{len(arguments)}", "name": name, "arguments": arguments}
            answer = requests.post(address + "api/call", json=body, headers=origin, timeout=WAIT)
            assert answer.status_code == 200, answer.text

        def reads_of(uri: str) -> int:
            return page.driver.execute_script(
                "return window.inspector.find(r => r.kind === 'message' && r.type === 'request'"
                " && r.method === 'resources/read' && r.message.params.uri === arguments[0]).length;",
                uri,
            )

        page.connected("2025-11-25")
        page.tab("resources")
        for uri in ("res://a", "res://b"):
            page.click(f'li[data-uri="{uri}"] button.subscribe')
            page.text_in(f'li[data-uri="{uri}"] button.subscribe', "Unsubscribe")
        page.open_item("resource", "res://a")
        page.text_in("#resource-contents", "a v0")
        call("bump", uri="res://a")  # A's read again: held by the server
        page.until(lambda d: reads_of("res://a") == 2, "A was never read again")
        page.open_item("resource", "res://b")
        page.text_in("#resource-contents", "b v0")
        call("bump", uri="res://b")  # B's read again is asked while A's runs
        page.css('#resource-updates li[data-uri="res://b"]')
        call("release")  # A's read again ends (A no longer on show)
        page.text_in("#resource-contents", "b v1")
        assert page.css("#resource-uri").text == "res://b"
