"""A Policy (and any request-intercepting extension) added to a ProxyServer holds for the requests
it forwards: what ``authorize`` denies is hidden from the proxy's listings (every page) and refused
by name, as a missing item is; rate limits count forwarded requests on every transport; other
extensions' ``intercept_request`` run before the front door, in the order added; an extension the
proxy could never call (``intercept_tool_call``) is refused when added.  Real sockets on
127.0.0.1 (port 0), a real stdio subprocess for the stdio front."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from conftest import WAIT

from mcp_ref import Client, McpError, Server
from mcp_ref.errors import LimitExceeded
from mcp_ref.extension import Extension
from mcp_ref.extensions.files import FileRootExtension
from mcp_ref.extensions.policy import Policy
from mcp_ref.proxy.server import proxy_server

ERAS = ("handshake", "modern")
FRONT_SCRIPT = str(Path(__file__).resolve().parents[1] / "servers" / "proxy_policy_front.py")


def target_server(*extensions: Extension) -> Server:
    """A target whose every listing takes three pages (two a page), with public caching hints."""
    server = Server(
        "target", page_size=2, ttl_ms=60_000, cache_scope="public", extensions=list(extensions)
    )
    for name in ("open_a", "secret_b", "open_c", "secret_d", "open_e"):
        server.tool(name=name)(lambda name=name: name)
    for name in ("open", "secret_1", "public", "secret_2", "shared"):
        server.resource(f"mem://{name}")(lambda name=name: f"text of {name}")
    for name in ("open", "secret", "other"):
        server.resource(f"tpl://{name}/{{id}}")(lambda id, name=name: f"{name} {id}")
    for name in ("greet", "secret_prompt", "farewell"):
        server.prompt(name=name)(lambda who="you", name=name: f"{name} {who}")
        server.completion(prompt=name)(lambda argument, value, context=None: ["ann", "bob"])
    return server


def authorize(principal, action, name) -> bool:
    return "secret" not in name


@contextlib.contextmanager
def served(server):
    """``server`` on HTTP on 127.0.0.1 (port 0) in a thread; yields its /mcp URL."""
    httpd = server.http_server("127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{httpd.url}/mcp"
    finally:
        httpd.shutdown()
        thread.join(WAIT)


@contextlib.contextmanager
def gated_proxy(*extensions, target: Server | None = None, back_era: str = "auto"):
    """A target on HTTP (``target``, else :func:`target_server`'s), and a proxy in front of it
    (its back connections of ``back_era``) with ``extensions`` added before it is served on
    HTTP; yields ``(proxy, front URL)``."""
    with served(target or target_server()) as target_url:
        options = {"timeout": WAIT, "era": back_era}
        proxy = proxy_server(target_url, client_options=options)
        try:
            for extension in extensions:
                proxy.add_extension(extension)
            with served(proxy) as url:
                yield proxy, url
        finally:
            proxy.close()


def modern_request(method: str, params: dict, name: str | None = None) -> tuple[str, dict]:
    """The body and headers of one raw 2026-07-28 request: its ``_meta`` envelope and the
    ``Mcp-Method`` (and ``Mcp-Name``) headers that mirror it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    return json.dumps(body), headers


def post_modern(url: str, method: str, params: dict, name: str | None = None) -> dict:
    """One raw 2026-07-28 request to ``url``; its JSON-RPC answer."""
    body, headers = modern_request(method, params, name)
    return requests.post(url, data=body, headers=headers, timeout=WAIT).json()


@pytest.mark.parametrize("era", ERAS)
def test_a_policy_on_a_proxy_hides_and_refuses_what_it_denies(era):
    with gated_proxy(Policy(authorize=authorize)) as (_, url):
        with Client.http(url, era=era, timeout=WAIT) as client:
            # every page of each listing, the gate filtering each (the target pages by two)
            assert [tool.name for tool in client.list_tools()] == ["open_a", "open_c", "open_e"]
            assert [str(r.uri) for r in client.list_resources()] == [
                "mem://open",
                "mem://public",
                "mem://shared",
            ]
            templates = client.list_resource_templates()
            assert [t.uri_template for t in templates] == ["tpl://open/{id}", "tpl://other/{id}"]
            assert [prompt.name for prompt in client.list_prompts()] == ["greet", "farewell"]
            # what it allows passes through
            assert client.call_tool("open_a").text == "open_a"
            assert client.read_resource("mem://open").contents[0].text == "text of open"
            assert client.get_prompt("greet").messages
            assert client.complete(argument="who", value="", prompt="greet").values
            # what it denies is refused as a missing item is, and never reaches the target
            refusals = {
                "tool": lambda: client.call_tool("secret_b"),
                "resource": lambda: client.read_resource("mem://secret_1"),
                "prompt": lambda: client.get_prompt("secret_prompt"),
                "completion": lambda: client.complete(
                    argument="who", value="", prompt="secret_prompt"
                ),
            }
            for what, refused in refusals.items():
                with pytest.raises(McpError) as hidden:
                    refused()
                assert "secret" in hidden.value.message, what
            with pytest.raises(McpError) as missing:
                client.read_resource("mem://nothing")
            with pytest.raises(McpError) as hidden:
                client.read_resource("mem://secret_1")
            assert hidden.value.code == missing.value.code
            assert hidden.value.message == "Resource not found: mem://secret_1"


@pytest.mark.parametrize(
    "method, params",
    [
        ("tools/list", {}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("prompts/list", {}),
        ("resources/read", {"uri": "mem://open"}),
    ],
)
def test_a_restricting_gate_makes_the_proxys_results_private(method, params):
    # 2026-07-28 server/utilities/caching §Cache Scope Field: a caller's own view is "private",
    # though the target said "public" of its own results
    with gated_proxy(Policy(authorize=authorize)) as (_, url):
        name = params.get("uri")
        result = post_modern(url, method, params, name)["result"]
        assert result["cacheScope"] == "private"
        assert result["ttlMs"] == 60_000  # the target's own freshness stays


class Recorder(Extension):
    """Records each request it sees, then goes on (``refuse``: a tool it refuses itself)."""

    def __init__(self, name: str, seen: list, refuse: str | None = None):
        self.name = name
        self.seen = seen
        self.refuse = refuse

    def intercept_request(self, call, proceed):
        self.seen.append((self.name, call.method))
        if call.method == "tools/call" and call.params.get("name") == self.refuse:
            raise McpError(f"refused by {self.name}", code=-32600)
        result = proceed()
        self.seen.append((self.name, "done"))
        return result


@pytest.mark.parametrize("era", ERAS)
def test_other_extensions_run_before_the_front_door_in_the_order_added(era):
    seen: list = []
    first, second = Recorder("first", seen), Recorder("second", seen, refuse="open_c")
    with gated_proxy(first, second) as (proxy, url):
        with Client.http(url, era=era, timeout=WAIT) as client:
            seen.clear()
            assert client.call_tool("open_a").text == "open_a"
            assert seen == [
                ("first", "tools/call"),
                ("second", "tools/call"),
                ("second", "done"),  # the forwarded answer came back through both
                ("first", "done"),
            ]
            with pytest.raises(McpError) as refused:
                client.call_tool("open_c")
            assert refused.value.message == "refused by second"


@pytest.mark.parametrize("era", ERAS)
def test_a_proxys_rate_limit_counts_forwarded_requests_over_stdio(era):
    with served(target_server()) as target_url:
        command = [sys.executable, FRONT_SCRIPT, target_url, "3/minute"]
        with Client.stdio(command, era=era, timeout=WAIT) as client:
            answers = []
            for name in ("secret_b", "open_a", "open_a", "open_a", "open_a"):
                try:
                    answers.append(client.call_tool(name).text)
                except LimitExceeded:
                    answers.append("limited")
                except McpError as exc:
                    answers.append(exc.message)
            # three a minute, the client's opening request counted too (initialize, or 2026's
            # server/discover), as a server's own limits count it; the gate added beside the
            # limit holds over stdio too
            assert answers == ["Unknown tool: secret_b", "open_a", *["limited"] * 3]


def test_a_tool_call_interceptor_is_refused_on_a_proxy():
    class Approval(Extension):
        name = "approval"

        def intercept_tool_call(self, caller, tool, arguments, context, run):
            return run(context)

    with served(target_server()) as target_url:
        proxy = proxy_server(target_url, client_options={"timeout": WAIT})
        try:
            with pytest.raises(TypeError, match="intercepts tool calls"):
                proxy.add_extension(Approval())
            assert [type(e).__name__ for e in proxy.extensions] == ["FrontDoor"]
        finally:
            proxy.close()


def test_a_malformed_completion_reference_through_a_gated_proxy_is_a_clear_error():
    with gated_proxy(Policy(authorize=authorize)) as (_, url):
        for ref in ({"type": ["ref/prompt"]}, {"type": "ref/prompt", "name": 7}, "greet"):
            params = {"ref": ref, "argument": {"name": "who", "value": ""}}
            answer = post_modern(url, "completion/complete", params)
            assert answer["error"]["code"] == -32602, answer
        assert post_modern(url, "tools/list", {})["result"]["tools"]  # and it serves on


class TargetLog(Extension):
    """On the target: records every resource URI a request names (a read's, a subscribe's, a
    listen's filter's)."""

    name = "target-log"

    def __init__(self):
        self.uris: list[str] = []

    def intercept_request(self, call, proceed):
        params = call.params if isinstance(call.params, dict) else {}
        if isinstance(params.get("uri"), str):
            self.uris.append(params["uri"])
        notifications = params.get("notifications")
        if isinstance(notifications, dict):
            self.uris.extend(notifications.get("resourceSubscriptions") or [])
        return proceed()


def listen_acknowledged(url: str, uris: list[str]) -> list[str]:
    """The resources a 2026-07-28 listen stream naming ``uris`` is acknowledged for (the stream
    closed once read)."""
    params = {"notifications": {"resourceSubscriptions": uris}}
    body, headers = modern_request("subscriptions/listen", params)
    with requests.post(url, data=body, headers=headers, timeout=WAIT, stream=True) as answer:
        for line in answer.iter_lines(decode_unicode=True):
            if line.startswith("data:"):
                acknowledged = json.loads(line[5:])
                assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
                return acknowledged["params"]["notifications"].get("resourceSubscriptions", [])
    raise AssertionError("the listen stream ended unacknowledged")


@pytest.mark.parametrize("back_era", ERAS)
def test_a_listen_through_a_gated_proxy_never_watches_a_hidden_resource(back_era):
    # 2025-11-25 server/resources: "Resource permissions SHOULD be checked before operations": a
    # hidden resource is never subscribed to at the target, and is acknowledged as a missing one
    log = TargetLog()
    target = target_server(log)
    with gated_proxy(Policy(authorize=authorize), target=target, back_era=back_era) as (_, url):
        agreed = listen_acknowledged(url, ["mem://secret_1", "mem://nothing", "mem://open"])
        assert "mem://secret_1" not in log.uris
        assert "mem://nothing" in log.uris  # the target was asked about the missing one
        if back_era == "handshake":  # a handshake-era target refuses to watch a missing one
            assert agreed == ["mem://open"]
        else:  # a 2026 target agrees to watch any URI (its updates come once it exists)
            assert agreed == ["mem://nothing", "mem://open", "mem://secret_1"]


def handshake_session(url: str, version: str = "2025-11-25") -> Callable[[str, dict], dict]:
    """A raw handshake-era session with ``url``: ``call(method, params)`` -> its JSON-RPC answer
    (without the id)."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    hello = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    opened = requests.post(
        url,
        data=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}),
        headers=headers,
        timeout=WAIT,
    )
    headers |= {"Mcp-Session-Id": opened.headers["Mcp-Session-Id"], "MCP-Protocol-Version": version}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    requests.post(url, data=json.dumps(initialized), headers=headers, timeout=WAIT)

    def call(method: str, params: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = requests.post(url, data=json.dumps(body), headers=headers, timeout=WAIT)
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            lines = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
            message = json.loads(lines[-1])
        else:
            message = answer.json()
        message.pop("id", None)
        return message

    return call


@pytest.mark.parametrize("back_era", ERAS)
def test_a_hidden_subscribe_through_a_gated_proxy_is_answered_as_a_missing_one(back_era):
    log = TargetLog()
    target = target_server(log)
    with gated_proxy(Policy(authorize=authorize), target=target, back_era=back_era) as (_, url):
        call = handshake_session(url)
        hidden = call("resources/subscribe", {"uri": "mem://secret_1"})
        missing = call("resources/subscribe", {"uri": "mem://nothing"})
        assert json.dumps(hidden).replace("secret_1", "N") == json.dumps(missing).replace(
            "nothing", "N"
        )
        assert "mem://secret_1" not in log.uris  # nothing subscribed at the target
        # as the target answers a URI it does not know: a 2026 one agrees, a handshake-era refuses
        assert ("result" in hidden) == (back_era == "modern"), hidden


# -- malformed requests: the server's own checks first, then the gate ------------------------------

LONG = "x" * 9000  # past a resource URI's bound (8,192 characters)
MALFORMED = [
    ("completion/complete", lambda n: {"ref": {"type": "ref/prompt", "name": n}, "argument": "x"}),
    ("completion/complete", lambda n: {"ref": {"type": "ref/prompt", "name": n}}),
    (
        "completion/complete",
        lambda n: {"ref": {"type": "ref/prompt", "name": n}, "argument": {"value": ""}},
    ),
    ("resources/read", lambda n: {"uri": n + LONG}),
    ("resources/subscribe", lambda n: {"uri": n + LONG}),
]
NAMES = {"completion/complete": ("secret_prompt", "nothing_prompt")}
URIS = ("mem://secret_1", "mem://nothing")


@pytest.mark.parametrize("method, params", MALFORMED)
def test_a_malformed_request_naming_a_hidden_item_is_refused_as_a_plain_server_refuses_it(
    method, params
):
    hidden, missing = NAMES.get(method, URIS)
    asked: list[str] = []

    def recording(principal, action, name) -> bool:
        asked.append(name)
        return authorize(principal, action, name)

    plain = target_server()
    plain.add_extension(Policy(authorize=recording))
    with served(plain) as plain_url:
        expected = handshake_session(plain_url)(method, params(hidden))
    assert expected["error"]["code"] == -32602  # (the reference: a plain server, same policy)
    with gated_proxy(Policy(authorize=recording)) as (_, url):
        call = handshake_session(url)
        assert call(method, params(hidden)) == expected
        assert call(method, params(missing)) == expected
    assert not any(len(name) > 8192 for name in asked)  # the gate never judged a URI past the bound


def test_a_proxy_refuses_every_item_of_its_own_rather_than_ignoring_it(tmp_path):
    # its feature requests all go to the target: what is registered on it would never be served
    (tmp_path / "notes.txt").write_text("hi")
    with served(target_server()) as target_url:
        proxy = proxy_server(target_url, client_options={"timeout": WAIT})
        try:
            registrations = {
                "a file root": lambda: proxy.add_file_root(str(tmp_path)),
                "a completion": lambda: proxy.completion(prompt="greet"),
                "a resource": lambda: proxy.add_extension(FileRootExtension(str(tmp_path))),
                "a tool": lambda: proxy.tool(name="mine")(lambda: "mine"),
                "a prompt": lambda: proxy.prompt(name="mine")(lambda: "mine"),
            }
            for what, register in registrations.items():
                with pytest.raises(TypeError, match=f"register {what} on the target server"):
                    register()
            assert [type(e).__name__ for e in proxy.extensions] == ["FrontDoor"]
            with served(proxy) as url, Client.http(url, timeout=WAIT) as client:
                # the target's own, nothing more
                templates = [t.uri_template for t in client.list_resource_templates()]
                assert templates == ["tpl://open/{id}", "tpl://secret/{id}", "tpl://other/{id}"]
                assert client.complete(argument="who", value="", prompt="greet").values == [
                    "ann",
                    "bob",
                ]
        finally:
            proxy.close()


def test_a_hidden_resource_acknowledged_on_a_stream_leaves_another_streams_watch_alone():
    # A 2026 target agrees to watch any URI, so a hidden one is acknowledged (never watched):
    # when that stream ends, the target keeps watching it for the stream that may see it.
    shown = {"secret": True}  # authorize changes its mind between the two listens
    watched = "mem://secret_1"

    def changing(principal, action, name) -> bool:
        return shown["secret"] or "secret" not in name

    with gated_proxy(Policy(authorize=changing), back_era="modern") as (proxy, url):
        ended = threading.Event()
        on_end = proxy.subscriptions.on_end

        def streams_ended(streams) -> None:
            on_end(streams)
            ended.set()

        proxy.subscriptions.on_end = streams_ended
        with (
            Client.http(url, era="modern", timeout=WAIT) as first,
            Client.http(url, era="modern", timeout=WAIT) as second,
        ):
            allowed = first.listen(resource_uris=[watched])
            assert allowed.acknowledged["resourceSubscriptions"] == [watched]
            shown["secret"] = False
            hidden = second.listen(resource_uris=[watched])
            assert hidden.acknowledged["resourceSubscriptions"] == [watched]  # as a missing one
            hidden.close()
            assert ended.wait(WAIT)
            assert proxy._watched == {watched: 1}  # the first stream's, still
            assert watched in proxy.watcher.subscribed
            allowed.close()
