"""The README tells the truth: its set-up commands, and its code examples run as written."""

import re
import subprocess
import sys

import pytest
from conftest import ROOT, WAIT

README = (ROOT / "README.md").read_text()


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, re.S)


def test_readme_opens_with_the_two_setup_commands():
    first_block = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert first_block == ['pip install -e ".[test]" && mcp-ref demo', "python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\npython -m pytest\n" in ci and 'pip install --quiet --disable-pip-version-check -e ".[test]"' in ci


def test_client_tour_runs(tmp_path):
    tour = next(b for b in _python_blocks() if "Client.stdio([sys.executable" in b)
    script = tmp_path / "tour.py"
    script.write_text(tour)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "mcp-ref-demo 2026-07-28"
    assert "hi False" in lines
    assert "Hey Ada!" in lines


def test_listen_example_runs_in_both_eras(tmp_path):
    script = tmp_path / "listen.py"
    script.write_text(_block("# listen.py"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    ack = "{'toolsListChanged': True, 'resourceSubscriptions': ['demo://counter']}"
    assert done.stdout.splitlines() == [
        f"2026-07-28 {ack}", "notifications/resources/updated", "notifications/tools/list_changed",
        f"2025-11-25 {ack}", "notifications/resources/updated", "notifications/tools/list_changed"]


def test_tasks_example_runs(tmp_path):
    script = tmp_path / "tasks.py"
    script.write_text(_block("# tasks.py"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["built docs True"]


def _block(marker: str) -> str:
    return next(b for b in _python_blocks() if marker in b)


def _write_server_example(folder) -> None:
    """The README's server.py, with the docs/ folder it serves beside it."""
    (folder / "docs").mkdir()
    (folder / "docs" / "hello.txt").write_text("hello from docs\n")
    (folder / "server.py").write_text(_block('Server("example"'))


def test_server_example_serves(tmp_path, connect):
    from mcp_ref import CreateMessageResult, TextContent

    _write_server_example(tmp_path)
    script = tmp_path / "server.py"
    client = connect(
        [sys.executable, str(script)],
        cwd=str(ROOT),  # docs/ is found beside the script, whatever the working directory
        sampling_handler=lambda params: CreateMessageResult(role="assistant", content=TextContent(text="hello"), model="m"),
    )
    assert client.instructions == "Try the add tool."
    assert client.call_tool("add", {"a": 1, "b": 2}).content[0].text == "3"
    assert client.call_tool("weather", {"city": "Oslo"}).structured_content == {"city": "Oslo", "celsius": 21.5}
    progress = []
    assert client.call_tool("slow", {"steps": 2}, on_progress=lambda p, t, m: progress.append(p)).content[0].text == "hello"
    assert progress == [1, 2]
    assert client.read_resource("notes://todo").contents[0].text == "a note called todo"
    assert client.get_prompt("greet", {"name": "Ada", "style": "formal"}).messages[0].content.text == "Good day, Ada."
    docs = [r.uri for r in client.list_resources() if r.uri.endswith("hello.txt")]
    assert len(docs) == 1 and client.read_resource(docs[0]).contents[0].text == "hello from docs\n"


def test_in_memory_example_runs(tmp_path):
    example = next(b for b in _python_blocks() if "Client.in_memory(server)" in b)
    script = tmp_path / "in_memory.py"
    script.write_text(example)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr


def test_callbacks_example_runs(tmp_path):
    import os

    _write_server_example(tmp_path)
    script = tmp_path / "callbacks.py"
    script.write_text(_block("sampling_handler=lambda params") +
                      '\nprint(client.call_tool("slow", {"steps": 1}).content[0].text)\nclient.close()\n')
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    # slow() asked the client's model, and the handler answered.  (The on_log callback prints from
    # its own thread, so its words may interleave with ours: look for the text, not a whole line.)
    assert "42" in done.stdout


def _serve_over_http(tmp_path, marker: str):
    """Run a README HTTP server block (its port made free); returns (process, port) once it listens."""
    import queue
    import threading

    from http_fixtures import free_port

    port = free_port()
    script = tmp_path / marker.lstrip("# ")
    script.write_text(_block(marker).replace("port=8000", f"port={port}"))
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    assert f":{port}/mcp" in lines.get(timeout=WAIT), "the server did not announce its address"
    return proc, port


@pytest.mark.slow
def test_http_examples_run(tmp_path):
    _write_server_example(tmp_path)
    for marker in ("# http_server.py", "# http_server_limits.py"):
        proc, port = _serve_over_http(tmp_path, marker)
        try:
            client = tmp_path / "http_client.py"
            client.write_text(_block('Client.http("http://127.0.0.1:8000/mcp"').replace(":8000", f":{port}"))
            done = subprocess.run([sys.executable, str(client)], capture_output=True, text=True, timeout=WAIT * 3)
            assert done.returncode == 0, done.stderr
            assert done.stdout.split() == ["5"]
        finally:
            proc.terminate()
            proc.wait(WAIT)


@pytest.mark.slow
def test_oauth_client_example_logs_in_to_the_protected_demo(tmp_path):
    """The README's OAuth client, against ``mcp-ref serve-demo --http --auth`` on the port it names."""
    import signal

    from test_http_deploy import LineReader, stop

    from http_fixtures import free_port

    port = free_port()
    command = [sys.executable, "-m", "mcp_ref", "serve-demo", "--http", f"127.0.0.1:{port}", "--auth"]
    demo = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        LineReader(demo.stderr).wait_for("serving the demo")
        script = tmp_path / "oauth_client.py"
        script.write_text(_block("oauth_client.py").replace("8000", str(port)))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == "signed in\n", done.stderr
        assert (tmp_path / "tokens.json").exists()
    finally:
        stop(demo, signal.SIGINT)


def test_protected_server_example_builds_a_protected_app(tmp_path):
    """The README's protected server: its app serves the metadata and answers 401 without a token."""
    import json

    script = tmp_path / "protected_server.py"
    script.write_text(_block("protected_server.py") + """
import io, json
def call(path, method="GET"):
    seen = {}
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "mcp.example.com",
               "SERVER_PORT": "443", "HTTP_HOST": "mcp.example.com", "wsgi.url_scheme": "https",
               "wsgi.input": io.BytesIO(b""), "CONTENT_LENGTH": "0", "HTTP_ACCEPT": "application/json, text/event-stream"}
    body = b"".join(app(environ, lambda status, headers, exc=None: seen.update(status=status, headers=dict(headers))))
    return seen, body
seen, body = call("/.well-known/oauth-protected-resource/mcp")
print(json.dumps(json.loads(body)))
seen, _ = call("/mcp", "POST")
print(seen["status"], seen["headers"].get("WWW-Authenticate"))
""")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    metadata, challenge = done.stdout.splitlines()
    assert json.loads(metadata)["authorization_servers"] == ["https://auth.example.com"]
    assert challenge.startswith("401") and 'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"' in challenge


def test_two_eras_example_asks_in_one_round_and_completes_on_the_retry(tmp_path):
    """The 2026-07-28 example: the first call answers input_required with both asks; the retry completes."""
    import importlib.util

    source = tmp_path / "ask_server.py"
    source.write_text(_block("# ask_server.py"))
    spec = importlib.util.spec_from_file_location("ask_server", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import requests
    from http_fixtures import TIMEOUT, serving

    from mcp_ref.transports.http_headers import request_headers

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}}}
    params = {"name": "plan", "arguments": {"city": "Lyon"}, "_meta": meta}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
               **request_headers("tools/call", params)}

    def post(request_id, body_params):
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body_params}
        return requests.post(served.mcp, json=body, headers=headers, timeout=TIMEOUT).json()["result"]

    with serving(module.server) as served:
        first = post(1, params)
        assert first["resultType"] == "input_required" and set(first["inputRequests"]) == {"who", "idea"}
        done = post(2, {**params, "requestState": first["requestState"], "inputResponses": {
            "who": {"action": "accept", "content": {"name": "Ada"}},
            "idea": {"role": "assistant", "content": {"type": "text", "text": "the old town"}, "model": "m"}}})
    assert done["content"][0]["text"] == "Ada goes to Lyon: the old town"


def test_policy_examples_build_what_they_say():
    server_block = next(b for b in _python_blocks() if "rate_limit=\"100/minute\"" in b)
    client_block = next(b for b in _python_blocks() if "server_request_limit=" in b)
    scope = {}
    exec(compile(server_block, "README policy example", "exec"), scope)  # noqa: S102 - our own README
    server = scope["server"]
    assert str(server.policy.rate_limit) == "100/60s" and server.get_tool("send_mail").rate_limit.count == 5
    principal = __import__("mcp_ref").Principal
    assert scope["authorize"](principal("p"), "tools/call", "admin_reset") is False
    assert scope["authorize"](principal("p", frozenset({"admin"})), "tools/call", "admin_reset") is True
    compile(client_block, "README approve example", "exec")
    approve_source = client_block.split("client = ")[0]
    exec(compile(approve_source, "README approve hook", "exec"), scope)  # noqa: S102
    from mcp_ref import ServerRequest

    edited = scope["approve"](ServerRequest("sampling/createMessage", {"messages": [], "maxTokens": 999}))
    assert edited.params["maxTokens"] == 200
    assert scope["approve"](ServerRequest("roots/list", {})) is False
