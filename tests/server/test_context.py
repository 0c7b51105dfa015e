"""The Context as FastMCP users write it (issue 23 item 2): ``await ctx.info(...)`` and every other
Context call inside ``async def`` tools, the same calls without ``await`` in plain tools.  In memory,
both eras.  (The lifespan, ``ctx.lifespan_context``: test_lifespan_holds.py.)  Then, over real stdio
in both eras (tests/servers/untested_server.py): what ``ctx.elicit`` accepts of the client's reply,
and a log message sent from a thread the handler left behind, after the answer.
"""

from __future__ import annotations

import json
import queue
import sys

import pytest
from conftest import SERVERS, WAIT
from test_modern_server import meta

from mcp_ref import Client, Server
from mcp_ref.sampling_and_elicitation import CreateMessageResult, ElicitResult
from mcp_ref.server import Context
from mcp_ref.types import TextContent

ERAS = ["handshake", "modern"]


def context_server() -> Server:
    server = Server("context")

    @server.resource("memo://note")
    def note() -> str:
        """A note the tools read back."""
        return "remember"

    @server.tool()
    async def async_everything(ctx: Context) -> str:
        """Every Context call, awaited, as FastMCP writes them."""
        sent = await ctx.info("async info")
        await ctx.debug("async debug")
        await ctx.warning("async warning", logger="mine")
        await ctx.error("async error")
        await ctx.log("notice", "async notice")
        await ctx.report_progress(1, 2, "half")
        await ctx.check_cancelled()
        await ctx.sleep(0)
        sampled = await ctx.sample("The meaning?", max_tokens=10)
        answered = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        roots = await ctx.list_roots()
        contents = await ctx.read_resource("memo://note")
        gathered = await ctx.gather()
        return json.dumps(
            {
                "sent": sent,
                "sampled": sampled.content.text,
                "sampled_type": type(sampled).__name__,
                "answered": answered.content,
                "answered_type": type(answered).__name__,
                "roots": [r.uri for r in roots],
                "contents": [c.text for c in contents],
                "gathered": gathered,
                "task": await ctx.start_task(),
            }
        )

    @server.tool()
    def sync_everything(ctx: Context) -> str:
        """The same calls in a plain function: no await, the values as before."""
        sent = ctx.info("sync info")
        sampled = ctx.sample("The meaning?", max_tokens=10)
        answered = ctx.elicit(
            "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        roots = ctx.list_roots()
        contents = ctx.read_resource("memo://note")
        return json.dumps(
            {
                "sent": bool(sent),
                "sent_is_true": sent == True,  # noqa: E712 - Done compares as its value
                "sampled": sampled.content.text,
                "answered": answered.content,
                "roots": [r.uri for r in roots],
                "contents": [c.text for c in contents],
                "roots_is_list": isinstance(roots, list),
                "task": bool(ctx.start_task()),
            }
        )

    @server.tool()
    async def async_without_await(ctx: Context) -> str:
        """A forgotten ``await`` loses nothing: the message was sent when the call was made."""
        ctx.info("not awaited")
        return "ok"

    return server


def connect(server: Server, era: str, logs: queue.Queue) -> Client:
    def sample(params):
        return CreateMessageResult(
            role="assistant", content=TextContent(text="forty-two"), model="m"
        )

    def elicit(params):
        return ElicitResult(action="accept", content={"name": "Ada"})

    client = Client.in_memory(
        server,
        era=era,
        on_log=logs.put,
        sampling_handler=sample,
        elicitation_handler=elicit,
        roots=["file:///work"],
    )
    client.set_logging_level("debug")
    return client


def drain(logs: queue.Queue, count: int) -> list:
    return [logs.get(timeout=WAIT) for _ in range(count)]


def until(logs: queue.Queue, data: str) -> list:
    """The log messages up to the one carrying ``data`` (2026-07-28 re-runs a handler that asks: its
    earlier messages repeat once per round)."""
    got = [logs.get(timeout=WAIT)]
    while got[-1].data != data:
        got.append(logs.get(timeout=WAIT))
    return got


@pytest.mark.parametrize("era", ERAS)
def test_every_context_call_can_be_awaited_in_an_async_tool(era):
    logs: queue.Queue = queue.Queue()
    progress: list = []
    with connect(context_server(), era, logs) as client:
        result = client.call_tool(
            "async_everything", on_progress=lambda *args: progress.append(args)
        )
        assert not result.is_error, result.content
        answer = json.loads(result.content[0].text)
        assert answer == {
            "sent": True,
            "sampled": "forty-two",
            "sampled_type": "CreateMessageResult",
            "answered": {"name": "Ada"},
            "answered_type": "ElicitResult",
            "roots": ["file:///work"],
            "contents": ["remember"],
            "gathered": [],
            "task": False,
        }
        got = drain(logs, 5)
        assert [(m.level, m.data) for m in got] == [
            ("info", "async info"),
            ("debug", "async debug"),
            ("warning", "async warning"),
            ("error", "async error"),
            ("notice", "async notice"),
        ]
        assert got[2].logger == "mine"
        assert progress == [(1, 2, "half")]


@pytest.mark.parametrize("era", ERAS)
def test_the_same_calls_work_unawaited_in_a_plain_tool(era):
    logs: queue.Queue = queue.Queue()
    with connect(context_server(), era, logs) as client:
        answer = json.loads(client.call_tool("sync_everything").content[0].text)
        assert answer == {
            "sent": True,
            "sent_is_true": True,
            "sampled": "forty-two",
            "answered": {"name": "Ada"},
            "roots": ["file:///work"],
            "contents": ["remember"],
            "roots_is_list": True,
            "task": False,
        }
        assert client.call_tool("async_without_await").content[0].text == "ok"
        assert {m.data for m in until(logs, "not awaited")} == {"sync info", "not awaited"}


TYPED_USER = """
from mcp_ref import Server
from mcp_ref.server import Context

server = Server("typed")


@server.tool()
async def awaited(ctx: Context) -> str:
    sent: bool = await ctx.info("x")
    await ctx.report_progress(1, 2)
    sampled = await ctx.sample("q", max_tokens=5)
    answer = await ctx.elicit("Name?", {"type": "object", "properties": {}})
    roots = await ctx.list_roots()
    reveal_type(sampled)
    reveal_type(roots)
    return f"{sent} {sampled.model} {answer.action} {roots[0].uri}"


@server.tool()
def plain(ctx: Context) -> str:
    if ctx.info("x"):
        pass
    sampled = ctx.sample("q", max_tokens=5)
    roots = ctx.list_roots()
    reveal_type(sampled)
    return f"{sampled.model} {len(roots)} {roots[0].uri}"
"""


@pytest.mark.slow
def test_awaited_and_plain_context_calls_type_check_for_a_user(tmp_path):
    import os
    import pathlib
    import re
    import subprocess
    import sys

    import mcp_ref

    (tmp_path / "user.py").write_text(TYPED_USER, encoding="utf-8")
    env = dict(os.environ, MYPYPATH=str(pathlib.Path(mcp_ref.__file__).resolve().parent.parent))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--follow-imports=silent",
            "user.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    revealed = re.findall(r'Revealed type is "(.*)"', run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert revealed == [
        "mcp_ref.sampling_and_elicitation.CreateMessageResult",
        "mcp_ref.server.asking.Answers[mcp_ref.feature_types.Root]",
        "mcp_ref.sampling_and_elicitation.CreateMessageResult",
    ], run.stdout


def test_run_over_http_serves_on_the_servers_own_http_server_and_run_http():
    import threading

    made: list = []

    class OwnHttp(Server):
        """A server that makes its own HTTP server and runs it its own way (both recorded)."""

        def http_server(self, host="127.0.0.1", port=8000, **options):
            made.append(("http_server", port))
            return super().http_server(host, port, **options)

        def run_http(self, host="127.0.0.1", port=8000, **options):
            made.append(("run_http", port))
            super().run_http(host, port, **options)

    server = OwnHttp("own-http")
    ready: queue.Queue = queue.Queue()
    thread = threading.Thread(
        target=server.run,
        kwargs={"transport": "http", "port": 0, "on_ready": ready.put},
        daemon=True,
    )
    thread.start()
    httpd = ready.get(timeout=WAIT)
    httpd.shutdown()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert made == [("run_http", 0), ("http_server", 0)]


# -- settings from the environment ------------------------------------------------------------------

HTTP_SCRIPT = '''
from mcp_ref import Server
server = Server("env-settings")

@server.tool()
def hello() -> str:
    """Say hello."""
    return "hello"

server.run(transport="http", stateless=True)  # stateless with no secret: mcp_ref logs a warning
'''


@pytest.mark.slow
def test_run_takes_host_port_and_log_level_from_the_environment(tmp_path):
    import os
    import re
    import signal
    import subprocess
    import sys

    script = tmp_path / "server.py"
    script.write_text(HTTP_SCRIPT)
    env = dict(os.environ, MCP_REF_HOST="127.0.0.1", MCP_REF_PORT="0", MCP_REF_LOG_LEVEL="debug")
    env.pop("MCP_REF_STATE", None)
    proc = subprocess.Popen(
        [sys.executable, str(script)], env=env, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.put(line.rstrip("\n"))

    import threading

    threading.Thread(target=read, daemon=True).start()
    try:
        seen = [lines.get(timeout=WAIT)]
        while not seen[-1].startswith("serving "):
            seen.append(lines.get(timeout=WAIT))
        line = seen[-1]
        # mcp_ref's own records reach stderr through run()'s handler (its format: level, then logger).
        assert any(" WARNING mcp_ref.http.server" in earlier for earlier in seen[:-1]), seen
        url = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", line)
        assert url and not url.group(1).endswith(":0/mcp"), (
            line
        )  # port 0 from MCP_REF_PORT: a free one
        with Client.http(url.group(1)) as client:
            assert client.call_tool("hello").content[0].text == "hello"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(WAIT)


def test_bad_settings_name_their_variable(monkeypatch):
    from mcp_ref.server.settings import address, log_level_from_environment

    monkeypatch.setenv("MCP_REF_PORT", "eighty")
    with pytest.raises(ValueError, match="MCP_REF_PORT"):
        address(None, None)
    assert address("0.0.0.0", 9) == ("0.0.0.0", 9)  # an argument wins
    monkeypatch.setenv("MCP_REF_LOG_LEVEL", "loud")
    with pytest.raises(ValueError, match="MCP_REF_LOG_LEVEL"):
        log_level_from_environment()
    monkeypatch.setenv("MCP_REF_LOG_LEVEL", "WARNING")
    assert log_level_from_environment() == 30


# -- what ctx.elicit accepts of the client's reply, over real stdio, in both eras ---------------------

UNTESTED = [sys.executable, str(SERVERS / "untested_server.py")]
ELICITATION = {"elicitation": {"form": {}, "url": {}}}
INFO = {"name": "raw", "version": "0"}


def elicit_and_reply(raw_peer, era: str, tool: str, reply: dict, arguments=None) -> dict:
    """Call ``tool`` of the untested server over stdio, answering its one elicitation with
    ``reply``: in the handshake era as the result of the server's ``elicitation/create``, at
    2026-07-28 in the retry's ``inputResponses``.  The answer to the ``tools/call``."""
    peer = raw_peer(UNTESTED)
    params = {"name": tool, "arguments": arguments or {}}

    def ask(request_id, method: str, params: dict) -> dict:
        peer.send_json({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return next_message(peer, lambda m: m.get("id") == request_id and "method" not in m)

    if era == "modern":
        first = ask(1, "tools/call", {**params, "_meta": meta(ELICITATION)})["result"]
        (key,) = first["inputRequests"]
        retry = {
            **params,
            "_meta": meta(ELICITATION),
            "inputResponses": {key: reply},
            "requestState": first["requestState"],
        }
        return ask(2, "tools/call", retry)
    init = {"protocolVersion": "2025-11-25", "capabilities": ELICITATION, "clientInfo": INFO}
    assert "result" in ask(1, "initialize", init)
    peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
    request = next_message(peer, lambda m: m.get("method") == "elicitation/create")
    peer.send_json({"jsonrpc": "2.0", "id": request["id"], "result": reply})
    return next_message(peer, lambda m: m.get("id") == 2 and "method" not in m)


def next_message(peer, wanted) -> dict:
    """The next message of ``peer`` that ``wanted`` picks (each read waits at most WAIT)."""
    while True:
        message = peer.recv()
        assert message is not None, "the server ended its output"
        if wanted(message):
            return message


NOT_AN_ACTION = 'InvalidParams: elicitation reply has no valid action: it must be "accept", '


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "tool, reply, text",
    [
        # accepted without content: the empty form is checked, and its required field is missing
        (
            "elicit_form",
            {"action": "accept"},
            "InvalidParams: elicitation reply does not match the requested schema: "
            '"name" is a required property',
        ),
        # an action the schema's enum does not have never reaches the handler, nor its content
        ("elicit_form", {"action": "ACCEPT", "content": {"name": 42}}, NOT_AN_ACTION),
        ("elicit_form", {"content": {"name": "Ada"}}, NOT_AN_ACTION),
        # with no field required, an accept without content is an empty form: valid
        ("elicit_optional", {"action": "accept"}, '{"action": "accept", "content": null}'),
        ("elicit_form", {"action": "decline"}, '{"action": "decline", "content": null}'),
    ],
    ids=[
        "accept-no-content",
        "unknown-action",
        "no-action",
        "optional-accept-no-content",
        "decline",
    ],
)
def test_an_elicitation_reply_outside_the_schema_never_reaches_the_handler(
    raw_peer, era, tool, reply, text
):
    """client/elicitation (2025-06-18 to 2026-07-28): ``ElicitResult.action`` is one of accept,
    decline, cancel, and an accepted form's content matches the requested schema; a reply that
    breaks either raises InvalidParams in ``ctx.elicit`` (this tool returns it as text)."""
    answer = elicit_and_reply(raw_peer, era, tool, reply)
    assert answer["result"]["content"][0]["text"].startswith(text)


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_a_url_elicitation_reply_with_an_unknown_action_is_invalid_params(raw_peer, era):
    arguments = {"url": "https://example.com/sign-in", "elicitation_id": "e-1"}
    answer = elicit_and_reply(raw_peer, era, "elicit_url", {"action": "ACCEPT"}, arguments)
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith(NOT_AN_ACTION[len("InvalidParams: ") :])


# -- a log message from a thread the handler left behind, after the answer -----------------------------


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_a_log_after_the_answer_is_dropped_where_logs_are_request_scoped(raw_peer, era):
    """2026-07-28 server/utilities/logging §Per-request log level: messages go "on the response
    stream of that request, before the final response"; ``notifications/message`` is
    request-scoped.  So once that request has ended, ``ctx.log`` sends nothing (False), as
    progress already stopped.  In the handshake era a log message belongs to the session, not to a
    request (2025-11-25 server/utilities/logging): it is still sent."""
    peer = raw_peer(UNTESTED)
    if era == "modern":
        envelope = meta({}, **{"io.modelcontextprotocol/logLevel": "debug", "progressToken": "p"})
    else:
        envelope = {"progressToken": "p"}
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": INFO}
        peer.send_json({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
        next_message(peer, lambda m: m.get("id") == "init")
        peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    seen: list = []

    def call(request_id, tool: str) -> dict:
        params = {"name": tool, "arguments": {"key": era}, "_meta": envelope}
        peer.send_json(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        )
        return next_message(peer, lambda m: seen.append(m) or m.get("id") == request_id)

    assert call(1, "log_after_answer")["result"]["content"][0]["text"] == "answered"
    del seen[:]
    # the thread left behind logs now, before this call is answered
    sent = json.loads(call(2, "release_late_log")["result"]["content"][0]["text"])
    late = [m["params"]["data"] for m in seen if m.get("method") == "notifications/message"]
    if era == "modern":
        assert sent == {"logged": False, "progress": False} and late == []
    else:
        assert sent == {"logged": True, "progress": False} and late == ["after the answer"]


@pytest.mark.slow
def test_a_log_message_being_written_as_the_request_ends_comes_before_the_answer(raw_peer):
    """2026-07-28 server/utilities/logging §Per-request log level: messages go "on the response
    stream of that request, before the final response".  A thread the handler left behind has
    found its request not ended and is writing its message when the request ends: the end waits
    for it (the check and the write are one step under the request's ``send_lock``, which its end
    takes too), so the message comes before the answer, never after it."""
    peer = raw_peer(UNTESTED)
    envelope = meta({}, **{"io.modelcontextprotocol/logLevel": "debug"})
    params = {"name": "log_as_the_call_ends", "arguments": {}, "_meta": envelope}
    peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    arrived: list = []

    def both_arrived(message: dict) -> bool:
        if message.get("id") == 1:
            arrived.append(("answer", message["result"]["content"][0]["text"]))
        elif message.get("method") == "notifications/message":
            arrived.append(("log", message["params"]["data"]))
        return len(arrived) == 2

    next_message(peer, both_arrived)
    assert arrived == [("log", {"n": "logged"}), ("answer", "answered")]
