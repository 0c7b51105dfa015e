"""``mcp-ref demo``: walk through every MCP feature against the demo server.

It starts :mod:`mcp_ref.workbench.demo` as a subprocess over stdio, plays the client's
part (including the sampling, elicitation and roots handlers a host would
provide) and prints what happens at each step.  With ``--trace`` every
JSON-RPC message is shown on stderr as well.  Exits 0 only if every step
behaved as the protocol says it should.

Each section names the code that implements it (``code: demo.py: echo, add; walkthrough.py:
_tools``): the server's functions in :mod:`mcp_ref.workbench.demo` (nested in ``build_server``),
the client's here.  What the demo server writes on its stderr (its log: the rate limit's refusals)
is shown in the section it belongs to, in order (``server stderr: ...``); every line is flushed as
it is printed, so that the output reads in order through a pipe too.  With ``on_section``
(``mcp-ref demo --diagram``), each section's title is also handed to it (a note in the diagram).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, TYPE_CHECKING, cast

from ..client import Client
from ..errors import (
    InvalidParams,
    LimitExceeded,
    RequestCancelled,
    RequestTimeout,
    ResourceNotFound,
)
from ..feature_types import LogMessage
from ..sampling_and_elicitation import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
)
from ..types import DiscoverResult, ImageContent, TextContent, TextResourceContents
from .demo import server_command
from .terminal import safe

if TYPE_CHECKING:
    from ..stdio import SubprocessTransport


def _show(text: str) -> None:
    """Print a line of the walkthrough, flushed: the output reads in order through a pipe too."""
    print(text, flush=True)


def _text_of(item) -> str | None:
    """The text of a content block or of a resource's contents (None for an image, a blob ...)."""
    return item.text if isinstance(item, (TextContent, TextResourceContents)) else None


class _Steps:
    """What the walkthrough prints: sections, lines, checks, and the demo server's stderr in between;
    and what the client is told (its notifications, by kind), for the steps to wait on without
    sleeping."""

    #: The demo server's stderr lines held until shown; past it, the oldest are dropped (and counted).
    MAX_PENDING = 100

    def __init__(self, on_section: Callable[[str], None] | None = None):
        self.failures: list[str] = []
        self.number = 0
        self.on_section = on_section
        #: The server's stderr lines not shown yet (bounded: MAX_PENDING).
        self.pending: list[str] = []
        self.dropped = 0
        #: The notifications of this tour so far, by kind (``log``, ``updated``, ``list_changed``).
        self.received: dict[str, list] = {}
        #: Notified as a stderr line or a notification arrives.
        self.arrived = threading.Condition()

    def section(self, title: str, server: str, client: str, *more: str) -> None:
        """A numbered section; ``server``: the functions of demo.py that implement it, ``client``: this
        module's; ``more``: others, as ``"FILE: NAME, NAME"`` (a file of mcp_ref/workbench)."""
        self.show_server_stderr()
        self.number += 1
        _show(f"\n{self.number}. {title}")
        code = [f"demo.py: {server}", f"walkthrough.py: {client}", *more]
        _show(f"   code: {'; '.join(code)}")
        if self.on_section is not None:
            self.on_section(f"{self.number}. {title}")

    def heading(self, text: str) -> None:
        """An era's heading (and a note in the diagram)."""
        self.show_server_stderr()
        _show(f"\n== {text} ==")
        if self.on_section is not None:
            self.on_section(text)

    # Each line quotes what the server said: shown through mcp_ref.workbench.terminal.safe, as the CLI does.
    def say(self, text: str) -> None:
        _show(f"   {safe(text)}")

    def check(self, ok: bool, text: str) -> None:
        _show(f"   {'ok  ' if ok else 'FAIL'} {safe(text)}")
        if not ok:
            self.failures.append(text)

    def put(self, kind: str, value) -> None:
        """A notification the client was told of (``on_log``, ``on_resource_updated`` ...)."""
        with self.arrived:
            self.received.setdefault(kind, []).append(value)
            self.arrived.notify_all()

    def wait(self, kind: str, count: int = 1, timeout: float = 5.0) -> list:
        """The notifications of ``kind`` received, once there are ``count`` (or ``timeout`` passed)."""
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.received.get(kind, [])) >= count, timeout)
            return list(self.received.get(kind, []))

    def server_stderr(self, line: str) -> None:
        """``Client.stdio(stderr=...)``: a line the demo server wrote on its stderr, held until shown."""
        with self.arrived:
            self.pending.append(line)
            if len(self.pending) > self.MAX_PENDING:
                del self.pending[0]
                self.dropped += 1
            self.arrived.notify_all()

    def show_server_stderr(self, until: str | None = None, timeout: float = 5.0) -> bool:
        """Print the server's stderr lines held so far; with ``until``, first wait (at most ``timeout``
        seconds) for a line holding that text.  True if ``until`` was seen (or not asked for)."""
        with self.arrived:
            seen = until is None or self.arrived.wait_for(
                lambda: any(until in line for line in self.pending), timeout
            )
            lines, self.pending = self.pending, []
            dropped, self.dropped = self.dropped, 0
        if dropped:
            _show(f"   server stderr: ... {dropped} earlier line(s) not shown")
        for line in lines:
            _show(f"   server stderr: {safe(line)}")
        return seen


def _sampling_handler(params: CreateMessageParams) -> CreateMessageResult:
    """A stand-in for the host's language model: it answers by echoing the question in capitals."""
    question = params.messages[-1].content.text
    return CreateMessageResult(
        role="assistant",
        content=TextContent(text=question.upper()),
        model="shouty-1",
        stop_reason="endTurn",
    )


def _elicitation_handler(params: ElicitParams) -> ElicitResult:
    """A stand-in for the host's form: the 'user' types a name and leaves colour at its default."""
    return ElicitResult(action="accept", content={"name": "Ada"})


def run(
    *,
    trace: Callable[[str, bytes], None] | None = None,
    timeout: float = 60.0,
    era: str = "auto",
    on_section: Callable[[str], None] | None = None,
) -> int:
    """Run the walkthrough; returns the exit code (0 when every step behaved).

    ``era``: ``"auto"`` (the tour in the 2026-07-28 era, then once more in the handshake era,
    then authorization), ``"modern"`` or ``"handshake"`` (that tour alone).  ``on_section(title)``
    is called as each section (and each era) begins: ``mcp-ref demo --diagram`` notes them.
    """
    steps = _Steps(on_section)
    started = time.perf_counter()
    _show("mcp_ref demo: a client and the bundled demo server, talking MCP over stdio.")
    if era in ("auto", "modern"):
        steps.heading(
            "The 2026-07-28 era: no handshake, every request names its version and capabilities"
        )
        _tour(steps, trace, timeout, "modern")
    if era in ("auto", "handshake"):
        steps.heading(
            "The same tour in the handshake era (2024-11-05 to 2025-11-25): initialize, one session"
        )
        _tour(steps, trace, timeout, "handshake")
        _authorization(steps, trace, timeout)
    elapsed = time.perf_counter() - started
    steps.show_server_stderr()
    if steps.failures:
        _show(f"\n{len(steps.failures)} step(s) did not behave: " + safe("; ".join(steps.failures)))
        return 1
    _show(
        f"\nEvery step behaved ({elapsed:.2f} s). Run `mcp-ref --trace demo` to see each JSON-RPC message."
    )
    return 0


def _tour(steps: _Steps, trace, timeout: float, era: str) -> None:
    """Every feature, in one era: the same client code, and what differs on the wire said as it goes."""
    steps.received = {}  # each tour waits for its own notifications
    with Client.stdio(
        server_command(),
        stderr=steps.server_stderr,  # shown in its section, in order (Steps.show_server_stderr)
        era=era,
        timeout=timeout,
        trace=trace,
        sampling_handler=_sampling_handler,
        elicitation_handler=_elicitation_handler,
        roots=[{"uri": "file:///home/demo/project", "name": "project"}],
        on_log=lambda m: steps.put("log", m),
        on_resource_updated=lambda uri: steps.put("updated", uri),
        on_list_changed=lambda kind: steps.put("list_changed", kind),
    ) as client:
        modern = client.era == "modern"
        _lifecycle(client, steps)
        _tools(client, steps)
        _progress_and_cancellation(client, steps)
        _logging(client, steps)
        _client_features(client, steps)
        _resources(client, steps)
        _prompts_and_completion(client, steps)
        _policy(client, steps)
        _tasks(client, steps)
        _concurrency(client, steps)
        steps.section("Shutdown", "main", "_tour")
        if modern:
            steps.say(
                "the listen stream is cancelled (notifications/cancelled), then stdin is closed"
            )
        steps.say(
            "closing stdin, then waiting for the server to exit (SIGTERM, SIGKILL if it would not)"
        )
    code = cast("SubprocessTransport", client.session.transport).returncode  # Client.stdio()'s
    steps.show_server_stderr()  # all of it: closing waited for the server's stderr to end
    steps.check(code == 0, f"the server exited by itself with status {code}")


def _lifecycle(client: Client, steps: _Steps) -> None:
    modern = client.era == "modern"
    title = "Discovery (server/discover replaces initialize)" if modern else "Initialization"
    steps.section(title, "build_server", "_lifecycle")
    if modern:
        discovered = cast(DiscoverResult, client.discover_result)  # the modern era discovers
        steps.say(f"server/discover -> versions {', '.join(discovered.supported_versions)}")
        steps.check(
            client.protocol_version == "2026-07-28" and client.initialize_result is None,
            "no initialize: each request carries protocolVersion and clientCapabilities in _meta",
        )
    info = client.server_info
    named = f"{info.name} {info.version}" if info is not None else "(no serverInfo)"
    steps.say(f"server {named}, protocol {client.protocol_version}")
    steps.say(f"server capabilities: {', '.join(sorted(client.server_capabilities))}")
    steps.say(
        f"client capabilities: {', '.join(sorted(client.capabilities(client.protocol_version)))}"
    )
    steps.say(f"instructions: {client.instructions}")
    client.ping()
    steps.check(
        True,
        "ping() asked server/discover again (2026-07-28 has no ping)"
        if modern
        else "ping answered",
    )
    if modern:
        steps.check(
            bool(
                client.connection.streams.feed.stream
                and client.connection.streams.feed.stream.acknowledged
            ),
            "a subscriptions/listen stream is open for the change callbacks, and acknowledged",
        )


def _tools(client: Client, steps: _Steps) -> None:
    steps.section("Tools", "echo, add, weather, pixel, divide, add_tool", "_tools")
    first = client.list_tools_page()
    tools = client.list_tools()
    steps.check(
        len(tools) > len(first.items) and first.next_cursor is not None,
        f"{len(tools)} tools, listed {len(first.items)} per page with an opaque cursor",
    )
    steps.say("tools: " + ", ".join(t.name for t in tools))
    echoed = client.call_tool("echo", {"text": "hello, MCP"}).text
    steps.check(echoed == "hello, MCP", f"echo -> {echoed!r}")
    total = client.call_tool("add", {"a": 2, "b": 40}).text
    steps.check(total == "42", f"add(2, 40) -> {total}")
    weather = client.call_tool("weather", {"city": "Lisbon"}).structured_content
    steps.check(
        weather
        == {"city": "Lisbon", "temperature": 21.5, "unit": "celsius", "conditions": "sunny"},
        f"weather -> structuredContent {weather}",
    )
    image = client.call_tool("pixel").content[0]
    steps.check(
        isinstance(image, ImageContent), f"pixel -> an {getattr(image, 'mime_type', None)} image"
    )
    result = client.call_tool("divide", {"a": 1, "b": 0})
    steps.check(bool(result.is_error), f"divide(1, 0) -> isError: {result.text!r}")
    result = client.call_tool("add", {"a": "two", "b": 1})
    steps.check(
        bool(result.is_error), f"add('two', 1) -> rejected by the input schema: {result.text!r}"
    )
    try:
        client.call_tool("no_such_tool")
        steps.check(False, "an unknown tool should be a protocol error")
    except InvalidParams as exc:
        steps.check(exc.code == -32602, f"unknown tool -> JSON-RPC error {exc.code}: {exc.message}")
    client.call_tool("add_tool", {"name": "late_arrival"})
    kinds = steps.wait("list_changed")
    where = " on the subscriptions/listen stream" if client.era == "modern" else ""
    steps.check("tools" in kinds, f"add_tool -> notifications/tools/list_changed{where}")
    steps.check(
        client.call_tool("late_arrival").text == "I am late_arrival", "the new tool answers"
    )


def _progress_and_cancellation(client: Client, steps: _Steps) -> None:
    steps.section(
        "Progress, cancellation, timeouts",
        "count_slowly, wait_for_cancel",
        "_progress_and_cancellation",
    )
    seen: list = []
    result = client.call_tool(
        "count_slowly",
        {"steps": 4, "delay": 0.01},
        on_progress=lambda p, total, message: seen.append((p, total, message)),
    )
    steps.check(
        len(seen) == 4 and seen[-1][0] == 4,
        f"count_slowly(4) reported progress {[s[0] for s in seen]} then {result.text!r}",
    )
    call = client.start_tool_call("wait_for_cancel")
    call.cancel("the user changed their mind")
    try:
        call.result()
        steps.check(False, "a cancelled call should not return")
    except RequestCancelled:
        steps.check(
            True, "wait_for_cancel cancelled -> notifications/cancelled sent, no response expected"
        )
    began = time.monotonic()
    try:
        client.call_tool("wait_for_cancel", timeout=0.2)
        steps.check(False, "the call should have timed out")
    except RequestTimeout as exc:
        steps.check(
            True,
            f"timeout after {time.monotonic() - began:.2f} s -> {exc}; the server was told to stop",
        )


def _logging(client: Client, steps: _Steps) -> None:
    steps.section("Logging", "log_levels", "_logging")
    client.set_logging_level("warning")
    how = (
        "each request's _meta carries logLevel warning"
        if client.era == "modern"
        else "logging/setLevel warning"
    )
    result = client.call_tool("log_levels")
    messages: list[LogMessage] = steps.wait("log", 2)
    levels = [m.level for m in messages]
    steps.check(levels == ["warning", "error"], f"{how}; received {levels} ({result.text})")


def _client_features(client: Client, steps: _Steps) -> None:
    steps.section(
        "Sampling, elicitation, roots (the server asks the client)",
        "ask_llm, ask_user, show_roots",
        "_client_features, _sampling_handler, _elicitation_handler",
    )
    if client.era == "modern":
        steps.say(
            "2026-07-28: the server answers input_required with its asks; the client's handlers answer;"
        )
        steps.say("the client retries with inputResponses and the signed requestState")
    result = client.call_tool("ask_llm", {"question": "what is mcp?"})
    steps.check(result.text == "shouty-1 says: WHAT IS MCP?", f"ask_llm -> {result.text!r}")
    result = client.call_tool("ask_user")
    steps.check(
        result.text == "hello Ada, who likes blue",
        f"ask_user -> {result.text!r} (colour filled from the schema default)",
    )
    result = client.call_tool("show_roots")
    steps.check("file:///home/demo/project" in result.text, f"show_roots -> {result.text!r}")
    client.set_roots([{"uri": "file:///home/demo/other", "name": "other"}])
    result = client.call_tool("show_roots")
    how = (
        "asked again with the next request"
        if client.era == "modern"
        else "notifications/roots/list_changed"
    )
    steps.check("other" in result.text, f"after set_roots ({how}): {result.text!r}")


def _resources(client: Client, steps: _Steps) -> None:
    steps.section(
        "Resources", "readme, pixel_png, counter_value, greeting, bump_counter", "_resources"
    )
    resources = client.list_resources()
    templates = client.list_resource_templates()
    steps.say("resources: " + ", ".join(r.uri for r in resources))
    steps.say("templates: " + ", ".join(t.uri_template for t in templates))
    read = client.read_resource("demo://readme")
    text = read.contents[0]
    readme = _text_of(text) or ""
    steps.check(
        readme.startswith("# mcp_ref demo"),
        f"read demo://readme -> {text.mime_type}, {len(readme)} chars",
    )
    if client.era == "modern":
        hits = client.cache.hits
        client.read_resource("demo://readme")
        steps.check(
            client.cache.hits == hits + 1,
            f"caching hints ttlMs {(read.raw or {}).get('ttlMs')}, "
            f"cacheScope {(read.raw or {}).get('cacheScope')}: "
            "read again from the client's cache, no request",
        )
    blob = client.read_resource("demo://pixel.png").contents[0]
    steps.check(hasattr(blob, "blob"), f"read demo://pixel.png -> base64 blob, {blob.mime_type}")
    greeting = client.read_resource("demo://greeting/Grace").contents[0]
    steps.check(
        _text_of(greeting) == "Hello, Grace!",
        f"read demo://greeting/Grace (template) -> {_text_of(greeting)!r}",
    )
    try:
        client.read_resource("demo://nowhere")
        steps.check(False, "an unknown resource should be an error")
    except ResourceNotFound as exc:
        expected = -32602 if client.era == "modern" else -32002
        steps.check(exc.code == expected, f"read demo://nowhere -> error {exc.code}")
    client.subscribe("demo://counter")
    client.call_tool("bump_counter")
    updates = steps.wait("updated")
    how = (
        "the listen stream re-opened with demo://counter in its filter"
        if client.era == "modern"
        else "resources/subscribe demo://counter"
    )
    steps.check(
        updates == ["demo://counter"], f"{how}; bump_counter -> notifications/resources/updated"
    )
    steps.say(
        f"demo://counter now reads {_text_of(client.read_resource('demo://counter').contents[0])}"
    )
    client.unsubscribe("demo://counter")


def _prompts_and_completion(client: Client, steps: _Steps) -> None:
    steps.section(
        "Prompts and completion",
        "greet, review, complete_greet, complete_greeting",
        "_prompts_and_completion",
    )
    prompts = client.list_prompts()
    steps.say("prompts: " + ", ".join(p.name for p in prompts))
    result = client.get_prompt("greet", {"name": "Grace", "style": "formal"})
    steps.check(
        _text_of(result.messages[0].content) == "Good day, Grace.",
        f"greet -> {_text_of(result.messages[0].content)!r}",
    )
    result = client.get_prompt("review", {"code": "print('hi')"})
    steps.check(
        [m.content.type for m in result.messages] == ["text", "resource", "text"],
        "review -> a text message, an embedded resource, an assistant reply",
    )
    try:
        client.get_prompt("greet")
        steps.check(False, "a missing required argument should be an error")
    except InvalidParams as exc:
        steps.check(True, f"greet without name -> error {exc.code}")
    completion = client.complete(prompt="greet", argument="name", value="Al")
    steps.check(
        completion.values == ["Alan", "Alonzo"], f"complete greet.name 'Al' -> {completion.values}"
    )
    completion = client.complete(resource="demo://greeting/{name}", argument="name", value="g")
    steps.check(
        completion.values == ["Grace"],
        f"complete demo://greeting/{{name}} 'g' -> {completion.values}",
    )


def _policy(client: Client, steps: _Steps) -> None:
    """Who may call what, and how often (``Server(authorize=..., rate_limit=...)``)."""
    steps.section(
        "Policy: who may see and call what, and how often",
        "demo_policy, admin_report, roll_dice",
        "_policy",
    )
    listed = {tool.name for tool in client.list_tools()}
    steps.check(
        "admin_report" not in listed and "roll_dice" in listed,
        "admin_report (for the mcp:admin scope) is left out of tools/list: this caller has no token",
    )
    try:
        client.call_tool("admin_report")
        steps.check(False, "calling admin_report anyway is refused")
    except InvalidParams as exc:
        steps.check(
            "Unknown tool" in exc.message,
            f"calling it anyway answers as for a tool that does not exist: {exc.code} {exc.message}",
        )
    rolls = [
        client.call_tool("roll_dice", {"sides": 6}).structured_content["result"] for _ in range(3)
    ]
    steps.check(
        all(1 <= roll <= 6 for roll in rolls),
        f"roll_dice allows 3 calls a minute per caller: {rolls}",
    )
    try:
        client.call_tool("roll_dice", {"sides": 6})
        steps.check(False, "a fourth roll within the minute is refused")
    except LimitExceeded as exc:
        steps.check(
            exc.retry_after is not None and exc.retry_after > 0,
            f"the fourth is refused: {exc.code} {exc.message} (data.retryAfter {exc.retry_after} s; "
            "over HTTP the status is 429 with Retry-After)",
        )
        # The server logs each refusal (a warning, on its stderr): shown here, where it happened.
        steps.check(
            steps.show_server_stderr(until="rate limit"),
            "the server logged the refusal on its stderr",
        )


def _tasks(client: Client, steps: _Steps) -> None:
    steps.section(
        "Tasks (the 2026-07-28 extension and 2025-11-25's tasks)", "build_report", "_tasks"
    )
    call = client.start_tool_call("build_report", {"topic": "MCP"}, task=True)
    result = call.result()
    task = f"({(call.task_id or '')[:8]}...)"
    if client.era == "modern":
        how = f"a task {task}, polled with tasks/get ->"
    elif client.protocol_version == "2025-11-25":  # the experimental tasks of the handshake era
        how = f"a 2025-11-25 task {task}, tasks/get then tasks/result ->"
    else:
        how = "no tasks before 2025-11-25: the plain result"
    steps.check(
        (call.task_id is None) == how.startswith("no")
        and result.text == "A short report on MCP: it works.",
        f"build_report -> {how} {result.text!r}",
    )


def _concurrency(client: Client, steps: _Steps) -> None:
    steps.section("Many threads, one session", "echo", "_concurrency")

    def mismatched(n: int) -> list[str]:
        """Thread ``n``'s 25 echo calls: the texts that did not come back as sent."""
        texts = [f"{n}-{i}" for i in range(25)]
        return [text for text in texts if client.call_tool("echo", {"text": text}).text != text]

    began = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        errors = [text for texts in pool.map(mismatched, range(8)) for text in texts]
    elapsed = time.perf_counter() - began
    steps.check(
        not errors,
        f"8 threads x 25 calls, every answer matched its request ({200 / elapsed:,.0f} calls/s)",
    )


def _authorization(steps: _Steps, trace, timeout: float) -> None:
    """The demo again, over HTTP as an OAuth protected resource (``serve-demo --http --auth``): the
    401, the discovery, the registration, the authorization (this walkthrough plays the browser, as
    the demo authorization server approves at once), the token, the retried request, and a step-up."""
    import re
    import subprocess

    import requests

    from ..http.framing import framing_session
    from ..inspector.masking import mask_url
    from ..oauth.browser import follow_redirect
    from ..oauth.client import OAuth
    from .login import traced_http

    steps.section(
        "Authorization (OAuth 2.1, over HTTP)",
        "build_protected_server, whoami",
        "_authorization",
        "demo_auth_server.py: protected_app",
    )
    command = server_command("serve-demo", "--http", "127.0.0.1:0", "--auth")
    server = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        found = None
        for _ in range(20):  # its first lines; the one that says where it listens
            line = cast(IO[str], server.stderr).readline()  # stderr=PIPE
            found = re.search(r"serving the demo at (http://\S+/mcp)", line)
            if found or not line:
                break
        if not found:
            steps.check(False, "serve-demo --http --auth started")
            return
        url = found.group(1)
        steps.say(f"started `mcp-ref serve-demo --http --auth`: {url}")
        probe = requests.post(
            url,
            json={"jsonrpc": "2.0", "id": 0, "method": "ping"},
            timeout=timeout,
            headers={"Accept": "application/json, text/event-stream"},
        )
        steps.check(
            probe.status_code == 401,
            f"a request without a token: {probe.status_code}, "
            f"WWW-Authenticate: {probe.headers.get('WWW-Authenticate')}",
        )
        http = traced_http(sys.stderr) if trace is not None else framing_session()

        def narrate(response, **kwargs):
            steps.say(
                f"{response.request.method} {mask_url(response.request.url)} -> {response.status_code}"
            )

        http.hooks["response"].append(narrate)

        def browser(authorization_url: str) -> str:
            steps.say("the user approves in a browser (played here: the demo approves at once)")
            return follow_redirect(authorization_url, timeout=timeout)

        auth = OAuth(authorize=browser, http=http, client_name="mcp-ref demo walkthrough")
        with Client.http(url, auth=auth, timeout=timeout, trace=trace) as client:
            steps.check(
                client.call_tool("echo", {"text": "signed in"}).text == "signed in",
                "the request, sent again with the token, is answered (scope mcp:tools)",
            )
            answer = client.call_tool("whoami", {}).text
            steps.check(
                "mcp:admin" in answer,
                f"whoami needs mcp:admin: 403 insufficient_scope, a step-up, then: {answer}",
            )
            listed = {tool.name for tool in client.list_tools()}
            report = client.call_tool("admin_report", {}).text
            steps.check(
                "admin_report" in listed and report.startswith("admin report for oauth:"),
                f"with mcp:admin, admin_report is listed and answers: {report}",
            )
        steps.say(
            "no token, code or secret is printed: `mcp-ref --trace demo` shows every exchange, masked"
        )
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
