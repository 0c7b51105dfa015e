"""A Policy added to a ProxyServer: a restricting gate makes the proxy's 2026 results private.
Real sockets on 127.0.0.1 (port 0)."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

import pytest
import requests
from conftest import WAIT

from mcp_ref import Server
from mcp_ref.extensions.policy import Policy
from mcp_ref.proxy.server import proxy_server

ERAS = ("handshake", "modern")
FRONT_SCRIPT = str(Path(__file__).resolve().parents[1] / "servers" / "proxy_policy_front.py")


def target_server() -> Server:
    """A target whose every listing takes three pages (two a page), with public caching hints."""
    server = Server("target", page_size=2, ttl_ms=60_000, cache_scope="public")
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
def gated_proxy(*extensions):
    """A target on HTTP, and a proxy in front of it with ``extensions`` added before it is
    served on HTTP; yields ``(proxy, front URL)``."""
    with served(target_server()) as target_url:
        proxy = proxy_server(target_url, client_options={"timeout": WAIT})
        try:
            for extension in extensions:
                proxy.add_extension(extension)
            with served(proxy) as url:
                yield proxy, url
        finally:
            proxy.close()


def post_modern(url: str, method: str, params: dict, name: str | None = None) -> dict:
    """One raw 2026-07-28 request to ``url``; its JSON-RPC answer."""
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
    answer = requests.post(url, data=json.dumps(body), headers=headers, timeout=WAIT)
    return answer.json()


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
