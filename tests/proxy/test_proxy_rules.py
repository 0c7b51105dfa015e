"""The proxy's rules beyond the matrix: schemas as they are, questions a client cannot answer,
requestState, the bound on back connections, a stateless front, the command's refusals.

The library form (``proxy_server``) served over HTTP on 127.0.0.1 port 0, in front of
tests/servers/proxy_target.py launched on stdio (a real subprocess).
"""

from __future__ import annotations

import sys
import threading

import pytest
from conftest import WAIT, Collector, run_cli, run_threads, schema_errors
from proxy_peers import (
    as_target,
    proxy_command,
    served_proxy,
    start_proxy_http,
    start_target_http,
    target_command,
)

from mcp_ref import Client, McpError, proxy_server
from mcp_ref.errors import InvalidRequest, MissingRequiredClientCapabilityError, ServerBusy

pytestmark = pytest.mark.slow


def served(back_era: str, **options):
    """A proxy of the target (``back_era``) served over HTTP; yields ``(proxy, url)``."""
    return served_proxy(target_command(back_era), **options)


@pytest.mark.parametrize("front_era", ["handshake", "modern"])
def test_the_tools_are_listed_as_the_target_lists_them(front_era):
    with Client.stdio(target_command("both"), era="handshake", timeout=WAIT) as direct:
        own = direct.request("tools/list")["tools"]
    with served("handshake") as (_, url), Client.http(url, era=front_era, timeout=WAIT) as client:
        proxied = client.request("tools/list")["tools"]
    assert proxied == own  # schemas, descriptions, annotations: as they are


def test_a_2026_client_that_cannot_answer_the_targets_question_gets_missing_capability():
    # 2026-07-28 basic/patterns/mrtr: "Servers MUST NOT send an inputRequests that the client has
    # not declared support for"; the proxy answers -32021 naming what the target asked for.
    with served("handshake") as (_, url), Client.http(url, era="modern", timeout=WAIT) as client:
        with pytest.raises(MissingRequiredClientCapabilityError) as caught:
            client.call_tool("work", {"steps": 1})
        assert caught.value.data["requiredCapabilities"] == {"elicitation": {}}
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


@pytest.mark.parametrize("declared", [{}, {"form": {}}])
@pytest.mark.parametrize("back_era", ["handshake", "modern"])
def test_a_2026_client_that_takes_form_mode_only_is_never_sent_a_url(back_era, declared):
    # 2026-07-28 client/elicitation: "Servers MUST NOT send elicitation requests with modes that
    # are not supported by the client", and an empty object means form mode only; the request
    # ends with -32021 naming URL mode, as mcp_ref's own server answers.
    with served(back_era) as (_, url), Client.http(url, era="modern", timeout=WAIT) as client:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": declared},
        }
        with pytest.raises(MissingRequiredClientCapabilityError) as caught:
            client.connection.session.request(
                "tools/call", {"name": "visit", "arguments": {}, "_meta": meta}, timeout=WAIT
            )
        assert caught.value.data["requiredCapabilities"] == {"elicitation": {"url": {}}}


@pytest.mark.parametrize("back_transport", ["stdio", "http"])
def test_a_2026_target_is_told_what_the_2026_client_in_front_declared(back_transport):
    # 2026-07-28 basic/index §_meta: capabilities are per request.  A client that declares none is
    # greeted as a stranger, as the target greets it directly, not asked for a name it cannot
    # give; one that declares elicitation is asked, through the proxy as directly.
    target_process = start_target_http("modern") if back_transport == "http" else None
    target = target_process.url if target_process else target_command("modern")

    def named(params):
        return {"action": "accept", "content": {"name": "Ada"}}

    try:
        with served_proxy(target) as (_, url):
            with Client.http(url, era="modern", timeout=WAIT) as client:
                greeting = client.call_tool("welcome").text
                assert greeting == "Hello, stranger! (client capabilities: [])"
            with Client.http(url, era="modern", timeout=WAIT, elicitation_handler=named) as client:
                assert client.call_tool("welcome").text == "Hello, Ada!"
            with Client.http(url, era="handshake", timeout=WAIT) as client:
                greeting = client.call_tool("welcome").text
                assert greeting == "Hello, stranger! (client capabilities: [])"
    finally:
        if target_process is not None:
            target_process.stop()


@pytest.mark.parametrize("back_era", ["handshake", "modern"])
def test_an_older_clients_results_are_fitted_to_its_revision(back_era):
    # Each message matches the revision the client in front negotiated, as the target's own
    # would: a 2025-03-26 client gets no resource_link block, structuredContent, outputSchema or
    # title (its schema has none of them); a 2025-06-18 client's elicitation has no mode.
    with served(back_era) as (_, url):
        with Client.http(url, protocol_version="2025-03-26", timeout=WAIT) as client:
            tools, cursor = [], None
            while True:  # every page (the target lists in pages)
                page = client.request("tools/list", {"cursor": cursor} if cursor else {})
                assert schema_errors("2025-03-26", "ListToolsResult", page) == []
                tools += page["tools"]
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            assert {"link", "add"} <= {tool["name"] for tool in tools}
            assert [tool for tool in tools if "title" in tool or "outputSchema" in tool] == []
            linked = client.request("tools/call", {"name": "link", "arguments": {}})
            assert schema_errors("2025-03-26", "CallToolResult", linked) == []
            assert linked["content"] == [{"type": "text", "text": "Resource note: note://1"}]
            added = client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
            assert "structuredContent" not in added and "5" in added["content"][0]["text"]
        asked = []

        def elicitation(params, context):
            asked.append(context.params)
            return {"action": "accept", "content": {"name": "Ada"}}

        def sampling(params):
            return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

        with Client.http(
            url,
            protocol_version="2025-06-18",
            timeout=WAIT,
            elicitation_handler=elicitation,
            sampling_handler=sampling,
            roots=["file:///srv"],
        ) as client:
            assert client.call_tool("work", {"steps": 1}).text.startswith("Ada|hi")
        (question,) = asked
        assert "mode" not in question


@pytest.mark.parametrize("front_era", ["handshake", "modern"])
def test_the_timeout_bounds_a_2026_targets_call_the_users_answers_included(front_era):
    # docs/proxy.md: the back clients' timeout "bounds each forwarded request, the user's answers
    # to the target's questions included".  A 2026 target's call is rounds of requests: the user
    # who does not answer in time fails the call, and is asked no more (a handshake-era client's
    # question is cancelled; a 2026 client's retry gets the failure).
    with served("modern", client_options={"timeout": 2}) as (proxy, url):
        withdrawn = threading.Event()

        def slow_user(params, context):
            if front_era == "handshake":
                if context.cancelled.wait(WAIT):
                    withdrawn.set()
            else:
                (parked,) = proxy._parked.values()
                with parked.lock:  # the call has failed at the proxy by now
                    if parked.lock.wait_for(lambda: parked.outcome is not None, WAIT):
                        withdrawn.set()
            return {"action": "accept", "content": {"name": "Ada"}}

        with Client.http(url, era=front_era, timeout=WAIT, elicitation_handler=slow_user) as client:
            with pytest.raises(McpError) as caught:
                client.call_tool("work", {"steps": 1})
            assert "did not answer tools/call" in caught.value.message
            # the question's withdrawal travels apart from the call's answer (its own stream)
            assert withdrawn.wait(WAIT)


def test_a_request_state_the_proxy_did_not_issue_is_refused():
    with served("modern") as (_, url), Client.http(url, era="modern", timeout=WAIT) as client:
        with pytest.raises(McpError) as caught:
            client.request(
                "tools/call",
                {"name": "echo", "arguments": {"text": "x"}, "requestState": "forged"},
            )
        assert caught.value.code == -32602 and "requestState" in caught.value.message


def test_a_question_answered_over_two_rounds_reaches_the_target():
    # The target asks three things one after the other: a 2026 client answers three rounds, each
    # retry carrying the proxy's requestState and the answer to the question of the round before.
    rounds = []

    def elicitation(params):
        rounds.append("elicitation")
        return {"action": "accept", "content": {"name": "Lin"}}

    def sampling(params):
        rounds.append("sampling")
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    with (
        served("handshake") as (_, url),
        Client.http(
            url,
            era="modern",
            timeout=WAIT,
            elicitation_handler=elicitation,
            sampling_handler=sampling,
            roots=["file:///srv"],
        ) as client,
    ):
        result = client.call_tool("work", {"steps": 1})
    assert result.text == "Lin|ok|1 roots|file:///srv"
    assert rounds == ["elicitation", "sampling"]  # each asked once: the target's call was kept


def test_back_connections_are_bounded_and_a_closed_session_gives_its_own_back():
    # max_back_connections=2: the watcher and one handshake-era session.
    with served("handshake", max_back_connections=2) as (proxy, url):
        first = Client.http(url, era="handshake", timeout=WAIT)
        try:
            assert first.call_tool("echo", {"text": "one"}).text == "one"
            with Client.http(url, era="handshake", timeout=WAIT) as second:
                with pytest.raises(ServerBusy) as caught:
                    second.call_tool("echo", {"text": "two"})
                assert caught.value.data == {"limit": 2}
        finally:
            first.close()  # its HTTP session ends: its back connection is closed
        with Client.http(url, era="handshake", timeout=WAIT) as third:
            assert third.call_tool("echo", {"text": "three"}).text == "three"


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_stateless_http_front_serves_both_eras(era):
    proxy = start_proxy_http(as_target(target_command("both")), "--stateless")
    try:
        with Client.http(proxy.url, era=era, timeout=WAIT) as client:
            assert client.call_tool("echo", {"text": "no session"}).text == "no session"
            assert client.read_resource("note://1").contents[0].text == "note one"
            if era == "handshake":
                # no notification can reach a stateless client after its request: none promised,
                # and a subscription refused saying why (as mcp_ref's own server does)
                declared = client.server_capabilities
                assert declared["resources"]["subscribe"] is False
                assert declared["resources"]["listChanged"] is False
                assert declared["tools"]["listChanged"] is False
                with pytest.raises(InvalidRequest) as refused:
                    client.connection.request("resources/subscribe", {"uri": "note://1"})
                assert "cannot apply over stateless HTTP" in refused.value.message
    finally:
        proxy.stop()


def test_the_command_says_what_is_wrong():
    misuse = run_cli("proxy", "python server.py", "--stdio", "--stateless")
    assert misuse.returncode == 2 and "--stateless goes with --http" in misuse.stderr
    neither = run_cli("proxy", "python server.py")
    assert neither.returncode == 2 and "--http" in neither.stderr
    missing = run_cli("proxy", "no-such-command-for-the-proxy", "--stdio")
    assert missing.returncode == 4 and "cannot launch" in missing.stderr


@pytest.mark.parametrize("back_era", ["handshake", "modern"])
@pytest.mark.parametrize("front_era", ["handshake", "modern"])
@pytest.mark.parametrize("back_transport", ["stdio", "http"])
def test_each_clients_questions_reach_that_client_alone(front_era, back_transport, back_era):
    # Four clients at once, each answering with its own name: each result carries its own.
    # (A 2026 request that may ask takes a leased connection to an HTTP target; on a command
    # target it shares the watcher with the others (a 2026 target) or takes its turn (a
    # handshake-era one); a handshake-era session has a connection of its own.)
    target_process = start_target_http(back_era) if back_transport == "http" else None
    target = target_process.url if target_process else target_command(back_era)
    proxy = proxy_server(target, client_options={"timeout": WAIT})
    httpd = proxy.http_server("127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:

        def one(i: int) -> str:
            def named(params):
                return {"action": "accept", "content": {"name": f"client-{i}"}}

            def model(params):
                return {
                    "role": "assistant",
                    "content": {"type": "text", "text": f"m{i}"},
                    "model": "m",
                }

            with Client.http(
                f"{httpd.url}/mcp",
                era=front_era,
                timeout=WAIT,
                elicitation_handler=named,
                sampling_handler=model,
                roots=[f"file:///client-{i}"],
            ) as client:
                return client.call_tool("work", {"steps": 1}).text

        results = run_threads(one, 4)
        assert results == [f"client-{i}|m{i}|1 roots|file:///client-{i}" for i in range(4)]
    finally:
        httpd.shutdown()
        thread.join(WAIT)
        proxy.close()
        if target_process is not None:
            target_process.stop()


def test_a_request_state_is_the_callers_and_its_requests_only():
    # The state of a parked call answers only a retry of the same request (mrtr: state SHOULD be
    # bound to "an identifier for the originating request").
    with served("handshake") as (_, url), Client.http(url, era="modern", timeout=WAIT) as client:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }
        first = client.connection.session.request(
            "tools/call", {"name": "work", "arguments": {"steps": 1}, "_meta": meta}, timeout=WAIT
        )
        assert first["resultType"] == "input_required" and "who" not in first["inputRequests"]
        state = first["requestState"]
        with pytest.raises(McpError) as caught:
            client.connection.session.request(
                "tools/call",
                {"name": "work", "arguments": {"steps": 2}, "_meta": meta, "requestState": state},
                timeout=WAIT,
            )
        assert caught.value.code == -32602 and "another request" in caught.value.message
        (key,) = first["inputRequests"]
        # answered: the target goes on to its next question, sampling, which this client did not
        # declare: the request ends with -32021 naming it
        with pytest.raises(MissingRequiredClientCapabilityError) as missing:
            client.connection.session.request(
                "tools/call",
                {
                    "name": "work",
                    "arguments": {"steps": 1},
                    "_meta": meta,
                    "requestState": state,
                    "inputResponses": {key: {"action": "decline"}},
                },
                timeout=WAIT,
            )
        assert missing.value.data["requiredCapabilities"] == {"sampling": {}}


def test_the_command_traces_what_it_says_to_the_target():
    stderr = Collector()
    command = proxy_command(as_target(target_command("both")), "--stdio", "--trace")
    with Client.stdio(command, stderr=stderr, timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "traced"}).text == "traced"
        stderr.wait_until(
            lambda lines: any(line.startswith("-->") and "traced" in line for line in lines)
        )
        stderr.wait_until(
            lambda lines: any(line.startswith("<--") and "traced" in line for line in lines)
        )


def test_the_command_never_prints_the_targets_credentials():
    # Common rules: secrets never in logs.  TARGET as stderr shows it (the line saying where the
    # proxy serves, "cannot reach", "cannot launch"): a URL's userinfo and secret query values,
    # and a command line's secret-looking values, masked.
    target = start_target_http("both")
    secret_url = target.url.replace("http://", "http://alice:S3CRET-PW@") + "?api_key=S3CRET-KEY"
    try:
        proxy = start_proxy_http(secret_url)
        announced = "".join(proxy.err.all)
        proxy.stop()
    finally:
        target.stop()
    assert "mcp-ref: proxying http://" in announced and "S3CRET" not in announced
    unreachable = run_cli("--connect-timeout", "5", "proxy", secret_url, "--http", "127.0.0.1:0")
    assert unreachable.returncode == 4 and "cannot reach http://" in unreachable.stderr
    assert "S3CRET" not in unreachable.stderr
    missing = run_cli("proxy", "no-such-command-for-the-proxy --api-key=S3CRET", "--stdio")
    assert missing.returncode == 4 and "cannot launch" in missing.stderr
    assert "S3CRET" not in missing.stderr


def test_the_options_of_a_client_of_its_own_are_refused():
    refused = run_cli("--root", ".", "proxy", "python server.py", "--stdio")
    assert refused.returncode == 2
    assert "--root does not apply to proxy" in refused.stderr


def test_a_handshake_era_clients_roots_change_reaches_a_handshake_era_target():
    changed = Collector()
    with (
        served("handshake") as (_, url),
        Client.http(
            url, era="handshake", timeout=WAIT, roots=["file:///a"], on_list_changed=changed
        ) as client,
    ):
        assert client.call_tool("echo", {"text": "session open"}).text == "session open"
        client.set_roots(["file:///a", "file:///b"])  # notifications/roots/list_changed
        changed.wait_until(lambda kinds: "tools" in kinds)
        assert "roots_changed" in [tool.name for tool in client.list_tools()]


@pytest.mark.parametrize("front_era", ["handshake", "modern"])
def test_a_target_that_exits_is_launched_again_and_the_client_goes_on(front_era):
    with served("both") as (_, url), Client.http(url, era=front_era, timeout=WAIT) as client:
        with pytest.raises(McpError) as caught:
            client.call_tool("die")
        assert caught.value.code == -32603 and "did not answer" in caught.value.message
        assert client.call_tool("echo", {"text": "again"}).text == "again"


def test_a_retry_with_a_malformed_answer_is_refused_and_can_be_sent_again():
    with served("handshake") as (_, url), Client.http(url, era="modern", timeout=WAIT) as client:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }
        call = {"name": "work", "arguments": {"steps": 1}, "_meta": meta}
        first = client.connection.session.request("tools/call", call, timeout=WAIT)
        (key,) = first["inputRequests"]
        retry = dict(call, requestState=first["requestState"])
        with pytest.raises(McpError) as caught:
            client.connection.session.request(
                "tools/call", dict(retry, inputResponses={key: "yes"}), timeout=WAIT
            )
        assert caught.value.code == -32602 and key in caught.value.message
        with pytest.raises(MissingRequiredClientCapabilityError):  # then sampling, undeclared
            client.connection.session.request(
                "tools/call",
                dict(retry, inputResponses={key: {"action": "decline"}}),
                timeout=WAIT,
            )


def test_a_handshake_era_client_that_cannot_answer_a_2026_target_gets_a_tool_error():
    # The 2026 target answers -32021; the handshake era has no such code, and a handshake-era
    # server answers a tool that cannot run for this client with a tool error result.
    with served("modern") as (_, url), Client.http(url, era="handshake", timeout=WAIT) as client:
        result = client.call_tool("work", {"steps": 1})
        assert result.is_error and "elicitation" in result.text


@pytest.mark.parametrize("back_era", ["handshake", "modern"])
@pytest.mark.parametrize("front_era", ["handshake", "modern"])
def test_url_mode_elicitation_crosses_the_eras(front_era, back_era):
    # 2025-11-25 client/elicitation: a URL-mode request carries an elicitationId; 2026-07-28
    # (changelog 11) removes it and notifications/elicitation/complete.
    asked, completed = Collector(), Collector()

    def visit(params):
        asked(params)
        return {"action": "accept"}

    with (
        served(back_era) as (_, url),
        Client.http(
            url,
            era=front_era,
            timeout=WAIT,
            elicitation_handler=visit,
            elicitation_modes=("form", "url"),
            on_elicitation_complete=completed,
        ) as client,
    ):
        assert client.call_tool("visit").text == "accept"
        (params,) = asked.items
        assert (params.mode, params.url) == ("url", "https://example.com/sign-in")
        if front_era == "handshake":
            assert params.elicitation_id  # the target's, or one the proxy made for a 2026 target
            if back_era == "handshake":
                assert params.elicitation_id == "e-1"
                completed.wait_until(lambda ids: "e-1" in ids)
        else:
            assert params.elicitation_id is None


def test_a_2026_command_target_serves_2026_requests_side_by_side():
    # The target's questions come in the answers of the request they are for, so 2026 requests
    # share the one process (no turns): a call goes on while another is still running.
    with served("modern") as (_, url), Client.http(url, era="modern", timeout=WAIT) as client:
        started = threading.Event()
        slow = client.start_tool_call("slow", on_progress=lambda *report: started.set())
        assert started.wait(WAIT)
        assert client.call_tool("echo", {"text": "beside"}).text == "beside"
        slow.cancel()


def test_a_proxy_refuses_items_of_its_own():
    # Its feature requests all go to the target: an item registered on it would never be served.
    with served("both") as (proxy, _):
        with pytest.raises(TypeError, match="register a tool on the target"):

            @proxy.tool()
            def mine() -> str:
                """Never served."""
                return "mine"

        with pytest.raises(TypeError, match="register a resource"):
            proxy.add_resource(lambda: "x", "mine://x")
        with pytest.raises(TypeError, match="register a prompt"):
            proxy.add_prompt(lambda: "x", name="mine")


def test_forwarded_requests_are_bounded():
    # max_forwarded=1: while one tools/call is in flight, the next is told to retry (-31000).
    with (
        served("modern", max_forwarded=1) as (_, url),
        Client.http(url, era="modern", timeout=WAIT) as client,
    ):
        started = threading.Event()
        slow = client.start_tool_call("slow", on_progress=lambda *report: started.set())
        assert started.wait(WAIT)
        with pytest.raises(ServerBusy) as caught:
            client.call_tool("echo", {"text": "one too many"})
        assert caught.value.data == {"limit": 1}
        assert client.list_tools()  # what does not forward a call still goes on
        slow.cancel()


@pytest.mark.parametrize(
    "setting",
    [
        {"max_back_connections": 1},
        {"max_back_connections": True},
        {"max_forwarded": 0},
        {"ask_timeout": 0},
        {"ask_timeout": "5"},
        {"max_back_connections_per_client": 0},
        {"max_forwarded_per_client": 1.5},
    ],
)
def test_the_bounds_are_checked_before_anything_is_launched(setting):
    with pytest.raises(ValueError, match=next(iter(setting))):
        proxy_server(["no-such-command-for-the-proxy"], **setting)


@pytest.mark.parametrize("back_era", ["handshake", "modern"])
def test_closing_the_proxy_ends_a_parked_request_and_its_threads(back_era):
    # A 2026 client shown the target's question that never retries: its call stays parked (up to
    # ask_timeout, 300 s by default).  proxy.close() ends it at once, so no thread of the proxy's
    # is left waiting for an answer (its pool's threads would hold the process's exit).
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    before = set(threading.enumerate())
    with served(back_era) as (proxy, url), Client.http(url, era="modern", timeout=WAIT) as client:
        first = client.connection.session.request(
            "tools/call", {"name": "work", "arguments": {"steps": 1}, "_meta": meta}, timeout=WAIT
        )
        assert first["resultType"] == "input_required"
        proxy.close()
    left = [t for t in set(threading.enumerate()) - before if t.name.startswith("mcp-proxy")]
    for thread in left:
        thread.join(WAIT)
    assert [t.name for t in left if t.is_alive()] == []


#: A handshake-era target that declares logging but refuses every ``logging/setLevel``.
REFUSES_LOG_LEVELS = """
from mcp_ref import Server
from mcp_ref.errors import McpError
from mcp_ref.extension import Extension


class NoLevels(Extension):
    name = "test/no-levels"

    def intercept_request(self, call, proceed):
        if call.method == "logging/setLevel":
            raise McpError("no levels here", code=-32603)
        return proceed()


Server("no-levels", extensions=[NoLevels()]).run_stdio()
"""


def test_a_target_that_refuses_the_log_level_is_not_left_running(tmp_path):
    # The watcher asks the target for every log message as it connects: when that fails, the
    # proxy is not made, and the connection it opened (here a process) is closed, not leaked.
    script = tmp_path / "no_levels.py"
    script.write_text(REFUSES_LOG_LEVELS)
    opened = []

    def connect(**options):
        client = Client.stdio([sys.executable, str(script)], era="handshake", **options)
        opened.append(client)
        return client

    try:
        with pytest.raises(McpError, match="no levels here"):
            proxy_server(connect, client_options={"timeout": WAIT})
        assert len(opened) == 1
        assert opened[0].session.is_closed
    finally:
        for client in opened:
            client.close()


@pytest.mark.parametrize("front_era", ["handshake", "modern"])
def test_a_front_clients_credentials_never_reach_the_target(front_era):
    # The proxy is the target's client: it sends the headers its user gave (client_options),
    # never what a front client sent it (common rules: credentials go only to the origin the user
    # named; a front client's token is for the proxy).
    from http_fixtures import HeaderRecorder, serving

    box: list[HeaderRecorder] = []
    with serving(wrap=lambda app: box.append(HeaderRecorder(app)) or box[0]) as target:
        proxy = proxy_server(
            target.mcp, client_options={"timeout": WAIT, "headers": {"X-Proxy": "own"}}
        )
        httpd = proxy.http_server("127.0.0.1", 0)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            with Client.http(
                f"{httpd.url}/mcp",
                era=front_era,
                timeout=WAIT,
                headers={"Authorization": "Bearer front-secret", "X-Front": "mine"},
            ) as client:
                assert client.call_tool("echo", {"text": "hi"}).text
                assert client.list_tools()
        finally:
            httpd.shutdown()
            thread.join(WAIT)
            proxy.close()
    seen = box[0].seen()
    assert seen and all(headers.get("x-proxy") == "own" for headers in seen)
    assert not [h for h in seen if "front-secret" in str(h) or "x-front" in h]


def test_a_sessions_question_reaches_it_after_another_of_its_requests_ended():
    # One handshake-era session, two requests at once on its back connection: ``work`` asks the
    # user, and while it waits, ``echo`` starts and ends.  The target's next question (sampling)
    # still belongs to ``work`` and reaches the session (it once found no request to go to).
    asked = threading.Event()
    go = threading.Event()

    def elicitation(params):
        asked.set()
        assert go.wait(WAIT)
        return {"action": "accept", "content": {"name": "Lin"}}

    def sampling(params):
        return {"role": "assistant", "content": {"type": "text", "text": "idea"}, "model": "m"}

    with (
        served("handshake") as (_, url),
        Client.http(
            url,
            era="handshake",
            timeout=WAIT,
            elicitation_handler=elicitation,
            sampling_handler=sampling,
            roots=["file:///here"],
        ) as client,
    ):
        work = client.start_tool_call("work", {"steps": 1})
        assert asked.wait(WAIT)
        assert client.call_tool("echo", {"text": "meanwhile"}).text == "meanwhile"
        go.set()
        assert work.result().text == "Lin|idea|1 roots|file:///here"
