"""Redis at its ``maxmemory`` (issue 32, item 7): a real ``redis-server`` filled up under the
``noeviction`` policy refuses every write ("OOM command not allowed"; redis-py's
``OutOfMemoryError``, or, before Redis 7, a script error naming it).  The server answers as it does
when Redis is unreachable (spec_notes/deployment.md, "Faults"): 503 with ``Retry-After`` where it
needs a write it cannot make (a new session), the sessions it holds served, rate limits counted per
process, a task refused with a clear -31000 "retry later" — never an HTTP 500 or a bare -32603.
Once memory is freed, everything is served as before.
"""

from __future__ import annotations

import json

import pytest
import requests
from conftest import WAIT
from http_fixtures import TIMEOUT, RawSession, request, start
from redis_fixture import own_redis  # noqa: F401 - a fixture

from mcp_ref import Client, Context, Server
from mcp_ref.http.headers import request_headers

pytestmark = pytest.mark.slow

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
#: Filler written before the cap: about 8 MB (of 8 kB values), freed to let Redis write again.
FILLER_KEYS, FILLER_SIZE = 1000, 8000


def build(url: str) -> Server:
    """A server on the Redis at ``url``: a plain tool, one reporting progress, a rate-limited
    one, a task."""
    server = Server("redis-full", state=url)

    @server.tool()
    def whoami() -> str:
        """Nothing shared needed."""
        return "here"

    @server.tool()
    def counted(ctx: Context) -> str:
        """Reports progress twice."""
        ctx.report_progress(1, 2)
        ctx.report_progress(2, 2)
        return "counted"

    @server.tool(rate_limit="100/minute")
    def limited() -> str:
        """Under a rate limit (its bucket lives in Redis)."""
        return "limited"

    @server.tool(task="required")
    def slow_task(ctx: Context) -> str:
        """A task (its record lives in Redis)."""
        ctx.start_task()
        return "task done"

    return server


def modern_call(url: str, name: str, request_id: int = 1, **params) -> requests.Response:
    """A 2026-07-28 ``tools/call`` POST (stateless: each request carries the protocol version)."""
    params = {
        "name": name,
        "arguments": {},
        **params,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "full", "version": "0"},
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        **request_headers("tools/call", params),
    }
    return requests.post(
        url,
        json={"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params},
        headers={k: v for k, v in headers.items() if v is not None},
        timeout=TIMEOUT,
    )


def answer_of(response: requests.Response) -> dict:
    """The JSON-RPC answer in a 200 (JSON, or the last message of an SSE body)."""
    assert response.status_code == 200, (response.status_code, response.text)
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        return [
            json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
        ][-1]
    return response.json()


def fill(client) -> None:
    """Fill Redis, then cap it below what it holds: every write is refused from now on."""
    for n in range(FILLER_KEYS):
        client.set(f"filler:{n}", b"x" * FILLER_SIZE)
    used = client.info("memory")["used_memory"]
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", used // 2)


def free(client) -> None:
    """Free the filler: Redis is well under its cap again."""
    for n in range(0, FILLER_KEYS, 100):
        client.delete(*(f"filler:{k}" for k in range(n, n + 100)))


def test_a_full_redis_gets_503_with_retry_after_or_a_clear_error_never_500_and_recovers(own_redis):
    import redis

    url = f"{own_redis.url}?namespace=full"
    server = build(url)
    served = start(server, keepalive=0.5)
    direct = redis.Redis.from_url(own_redis.url)
    try:
        held = RawSession(served.mcp)
        held.initialize()  # before the fill: this worker holds the session
        fill(direct)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            direct.set("probe", "x")  # the fault is real

        fresh = RawSession(served.mcp).post(
            request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
                1,
            ),
            version=False,
        )
        assert fresh.status_code == 503 and fresh.headers.get("Retry-After"), (
            fresh.status_code,
            fresh.text,
        )

        for name, expected, progress in (
            ("whoami", "here", 0),
            ("counted", "counted", 2),
            ("limited", "limited", 0),
        ):
            # held here: served (its touch of the record is lost, and said so), with its progress
            params = {"name": name, "arguments": {}, "_meta": {"progressToken": name}}
            request_id, response = held.call("tools/call", params)
            assert response.status_code == 200, (name, response.status_code, response.text)
            answer, before = held.result(response, request_id)
            assert answer["result"]["content"][0]["text"] == expected
            assert (
                len([m for m in before if m.get("method") == "notifications/progress"]) == progress
            )

        listened = held.get()  # its GET stream needs the shared event store: 503, retry later
        listened.close()
        assert listened.status_code == 503 and listened.headers.get("Retry-After"), (
            listened.status_code
        )

        limited = answer_of(
            modern_call(served.mcp, "limited")
        )  # the bucket: counted in this process meanwhile
        assert limited["result"]["content"][0]["text"] == "limited"
        task = answer_of(modern_call(served.mcp, "slow_task", 2))
        assert task["error"]["code"] == -31000 and "retry later" in task["error"]["message"], task
        assert "Internal error" not in task["error"]["message"]

        free(direct)
        listened = held.get()  # the held session's stream, now that Redis writes again
        listened.close()
        assert listened.status_code == 200
        again = Client.http(
            served.mcp, timeout=WAIT, era="handshake"
        )  # a new session, on a Redis with room
        try:
            assert again.call_tool("limited").content[0].text == "limited"
        finally:
            again.close()
        created = answer_of(modern_call(served.mcp, "slow_task", 3))
        assert created["result"]["resultType"] == "task", created
    finally:
        served.stop()
        direct.close()
        if server.shared_state is not None:
            server.shared_state.close()
