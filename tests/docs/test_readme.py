"""The README tells the truth: its set-up commands, and its code examples run as written.

Every fenced block of the README is accounted for in ``BLOCKS``: a marker (text found in that block
and no other) and the test that runs it, or ``SKIP: <reason>``; tests/docs/test_docs_blocks.py
fails for a block added without an entry.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, WAIT

README = (ROOT / "README.md").read_text()

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    'pip install -e ".[test]" && mcp-ref demo': "test_readme_opens_with_the_two_setup_commands",
    "git+https://git.example.com/you/mcp_ref.git": "test_install_commands_work_in_a_fresh_venv",
    "print(client.server_info.name, client.protocol_version)": "test_client_tour_runs",
    "sampling_handler=lambda params": "test_callbacks_example_runs",
    "# server.py": "test_server_example_serves",
    "# shop.py": "test_shop_example_runs",
    "Client.in_memory(server)": "test_in_memory_example_runs",
    "# http_server.py": "test_http_examples_run",
    "gunicorn -k gthread -w 2 --threads 8 mcp_ref.workbench.demo:wsgi_app": "test_http_deploy_commands_serve",
    "gunicorn_hooks": "SKIP: Redis and two gunicorn deployments; tests/state/test_scale_out.py runs the same gunicorn command "
    "line (-c python:mcp_ref.http.gunicorn_hooks) against a real Redis",
    'Client.http("http://127.0.0.1:8000/mcp", headers': "test_http_examples_run",
    "# http_server_limits.py": "test_http_examples_run",
    "# ask_server.py": "test_two_eras_example_asks_in_one_round_and_completes_on_the_retry",
    "# listen.py": "test_listen_example_runs_in_both_eras",
    "# tasks.py": "test_tasks_example_runs",
    "# oauth_client.py": "test_oauth_client_example_logs_in_to_the_protected_demo",
    "# protected_server.py": "test_protected_server_example_builds_a_protected_app",
    'rate_limit="100/minute"': "test_policy_examples_build_what_they_say",
    "server_request_limit=": "test_approve_example_runs_as_pasted",
    "mcp-ref call TARGET add a=1 b=2": "test_cli_commands_run",
    "python benchmarks/bench.py --state-only": "SKIP: the benchmark runs for minutes; tests/workbench/test_bench.py runs "
    "--help and a --state-only --quick round",
}


def _blocks() -> list[str]:
    """Every fenced code block of the README, whatever its language."""
    return re.findall(r"^```[a-z]*\n(.*?)^```", README, re.S | re.M)


def _block(marker: str) -> str:
    assert marker in BLOCKS, f"{marker!r}: add it to BLOCKS"
    return next(b for b in _blocks() if marker in b)


def _commands(block: str) -> list[str]:
    """A shell block's command lines, each without its trailing ``# comment``."""
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in block.splitlines() if line.strip()]


def _env(tmp_path) -> dict:
    """This interpreter's bin first on PATH (``python``, ``mcp-ref``), and a cache of the test's own."""
    return dict(
        os.environ,
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )


def test_readme_opens_with_the_two_setup_commands():
    first_block = _blocks()[0].strip().splitlines()
    assert first_block == ['pip install -e ".[test]" && mcp-ref demo', "python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert (
        "\npython -m pytest\n" in ci
        and 'pip install --quiet --disable-pip-version-check -e ".[test]"' in ci
    )


@pytest.mark.slow
def test_client_tour_runs(tmp_path):
    tour = _block("print(client.server_info.name, client.protocol_version)")
    script = tmp_path / "tour.py"
    script.write_text(tour)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "mcp-ref-demo 2026-07-28"
    assert "hi False" in lines
    assert "Hey Ada!" in lines


@pytest.mark.slow
def test_listen_example_runs_in_both_eras(tmp_path):
    script = tmp_path / "listen.py"
    script.write_text(_block("# listen.py"))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stderr
    ack = "{'toolsListChanged': True, 'resourceSubscriptions': ['demo://counter']}"
    assert done.stdout.splitlines() == [
        f"2026-07-28 {ack}",
        "notifications/resources/updated",
        "notifications/tools/list_changed",
        f"2025-11-25 {ack}",
        "notifications/resources/updated",
        "notifications/tools/list_changed",
    ]


@pytest.mark.slow
def test_tasks_example_runs(tmp_path):
    script = tmp_path / "tasks.py"
    script.write_text(_block("# tasks.py"))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["2026-07-28 built docs True", "2025-11-25 built docs True"]


def _write_server_example(folder, docs: bool = True) -> None:
    """The README's server.py, with (``docs``) a file in the docs/ folder it serves beside it."""
    if docs:
        (folder / "docs").mkdir()
        (folder / "docs" / "hello.txt").write_text("hello from docs\n")
    (folder / "server.py").write_text(_block("# server.py"))


@pytest.mark.slow
def test_server_example_serves(tmp_path, connect):
    from mcp_ref import CreateMessageResult, TextContent

    _write_server_example(tmp_path)
    script = tmp_path / "server.py"
    client = connect(
        [sys.executable, str(script)],
        cwd=str(ROOT),  # docs/ is found beside the script, whatever the working directory
        sampling_handler=lambda params: CreateMessageResult(
            role="assistant", content=TextContent(text="hello"), model="m"
        ),
    )
    assert client.instructions == "Try the add tool."
    assert client.call_tool("add", {"a": 1, "b": 2}).content[0].text == "3"
    assert client.call_tool("weather", {"city": "Oslo"}).structured_content == {
        "city": "Oslo",
        "celsius": 21.5,
    }
    progress = []
    assert (
        client.call_tool("slow", {"steps": 2}, on_progress=lambda p, t, m: progress.append(p))
        .content[0]
        .text
        == "hello"
    )
    assert progress == [1, 2]
    assert client.read_resource("notes://todo").contents[0].text == "a note called todo"
    assert (
        client.get_prompt("greet", {"name": "Ada", "style": "formal"}).messages[0].content.text
        == "Good day, Ada."
    )
    docs = [r.uri for r in client.list_resources() if r.uri.endswith("hello.txt")]
    assert len(docs) == 1 and client.read_resource(docs[0]).contents[0].text == "hello from docs\n"


@pytest.mark.slow
def test_in_memory_example_runs(tmp_path):
    example = _block("Client.in_memory(server)")
    script = tmp_path / "in_memory.py"
    script.write_text(example)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_shop_example_runs(tmp_path):
    """Rich types both ways, an awaited ctx.info, the lifespan's value, and a ResourceError's message."""
    script = tmp_path / "shop.py"
    script.write_text(_block("# shop.py"))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stderr
    # the on_log callback prints from its own thread: its line may come between ours, so look for the texts
    # (each print has one argument: one write, never split by the other thread's)
    assert done.stdout.count("tea") >= 2  # the log line, and the resource read
    for text in (
        "ordering tea for 4.20, due 01 March",
        "4.20 2026-03-01",
        "-32603 no order 00000000-0000-0000-0000-000000000000",
    ):
        assert text in done.stdout, (text, done.stdout)


@pytest.mark.slow
def test_server_example_runs_as_pasted(tmp_path, connect):
    """server.py alone in an empty folder (no docs/ yet): it starts, serves, and makes the folder it serves."""
    _write_server_example(tmp_path, docs=False)
    client = connect([sys.executable, str(tmp_path / "server.py")], cwd=str(ROOT))
    assert client.call_tool("add", {"a": 2, "b": 3}).content[0].text == "5"
    assert (tmp_path / "docs").is_dir()


@pytest.mark.slow
def test_callbacks_example_runs(tmp_path):
    """As pasted, beside the README's server.py (``python server.py``)."""
    _write_server_example(tmp_path, docs=False)
    script = tmp_path / "callbacks.py"
    script.write_text(_block("sampling_handler=lambda params"))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
    )
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
    proc = subprocess.Popen(
        [sys.executable, str(script)], cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
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
            client.write_text(
                _block('Client.http("http://127.0.0.1:8000/mcp", headers').replace(
                    ":8000", f":{port}"
                )
            )
            done = subprocess.run(
                [sys.executable, str(client)], capture_output=True, text=True, timeout=WAIT * 3
            )
            assert done.returncode == 0, done.stderr
            assert done.stdout.split() == ["5"]
        finally:
            proc.terminate()
            proc.wait(WAIT)


@pytest.mark.slow
def test_oauth_client_example_logs_in_to_the_protected_demo(tmp_path):
    """The README's OAuth client, against ``mcp-ref serve-demo --http --auth`` on the port it names."""
    import signal

    from http_fixtures import free_port
    from test_http_deploy import LineReader, stop

    port = free_port()
    command = [
        sys.executable,
        "-m",
        "mcp_ref",
        "serve-demo",
        "--http",
        f"127.0.0.1:{port}",
        "--auth",
    ]
    demo = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        LineReader(demo.stderr).wait_for("serving the demo")
        script = tmp_path / "oauth_client.py"
        script.write_text(_block("# oauth_client.py").replace("8000", str(port)))
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=WAIT * 3,
            cwd=tmp_path,
        )
        assert done.returncode == 0 and done.stdout == "signed in\n", done.stderr
        assert (tmp_path / "tokens.json").exists()
    finally:
        stop(demo, signal.SIGINT)


@pytest.mark.slow
def test_protected_server_example_builds_a_protected_app(tmp_path):
    """The README's protected server: its app serves the metadata and answers 401 without a token."""
    import json

    script = tmp_path / "protected_server.py"
    script.write_text(
        _block("# protected_server.py")
        + """
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
"""
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    metadata, challenge = done.stdout.splitlines()
    assert json.loads(metadata)["authorization_servers"] == ["https://auth.example.com"]
    assert (
        challenge.startswith("401")
        and 'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"'
        in challenge
    )


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

    from mcp_ref.http.headers import request_headers

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
    }
    params = {"name": "plan", "arguments": {"city": "Lyon"}, "_meta": meta}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        **request_headers("tools/call", params),
    }

    def post(request_id, body_params):
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body_params}
        return requests.post(served.mcp, json=body, headers=headers, timeout=TIMEOUT).json()[
            "result"
        ]

    with serving(module.server) as served:
        first = post(1, params)
        assert first["resultType"] == "input_required" and set(first["inputRequests"]) == {
            "who",
            "idea",
        }
        done = post(
            2,
            {
                **params,
                "requestState": first["requestState"],
                "inputResponses": {
                    "who": {"action": "accept", "content": {"name": "Ada"}},
                    "idea": {
                        "role": "assistant",
                        "content": {"type": "text", "text": "the old town"},
                        "model": "m",
                    },
                },
            },
        )
    assert done["content"][0]["text"] == "Ada goes to Lyon: the old town"


def test_policy_examples_build_what_they_say():
    server_block = _block('rate_limit="100/minute"')
    client_block = _block("server_request_limit=")
    scope = {}
    exec(compile(server_block, "README policy example", "exec"), scope)
    server = scope["server"]
    assert (
        str(server.policy.rate_limit) == "100/60s"
        and server.get_tool("send_mail").options["rate_limit"].count == 5
    )
    principal = __import__("mcp_ref").Principal
    assert scope["authorize"](principal("p"), "tools/call", "admin_reset") is False
    assert (
        scope["authorize"](principal("p", frozenset({"admin"})), "tools/call", "admin_reset")
        is True
    )
    compile(client_block, "README approve example", "exec")
    approve_source = client_block.split("client = ")[0]
    exec(compile(approve_source, "README approve hook", "exec"), scope)
    from mcp_ref import ServerRequest

    edited = scope["approve"](
        ServerRequest("sampling/createMessage", {"messages": [], "maxTokens": 999})
    )
    assert edited.params["maxTokens"] == 200
    assert scope["approve"](ServerRequest("roots/list", {})) is False


@pytest.mark.slow
def test_approve_example_runs_as_pasted(tmp_path):
    """The approve hook's client, as pasted beside the README's server.py: it connects, and closes."""
    _write_server_example(tmp_path, docs=False)
    script = tmp_path / "approve.py"
    script.write_text(_block("server_request_limit="))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)  # five pip installs and a venv: ~20 s alone, more on a busy machine
def test_install_commands_work_in_a_fresh_venv(tmp_path):
    """ "Using mcp_ref in your own project": each pip line, in a new virtual environment.

    The checkout is a copy of this tree (building leaves nothing behind in it), the git URL this
    repository's (``git+file://``).  The venv sees the packages of the interpreter running the suite
    (a ``.pth`` file naming its site directories), so the runtime dependencies, the extras' and the
    build's (``setuptools``, ``wheel``) are already there: ``--no-index --no-build-isolation`` keeps
    pip off the network, and a missing extra's dependency fails the install.  Not
    ``--system-site-packages``: from inside a venv that shows the *base* interpreter's packages, which
    in a venv made from a bare interpreter lack ``wheel`` (pip: "invalid command 'bdist_wheel'").
    """
    import shutil
    import site
    import sysconfig

    checkout = tmp_path / "mcp_ref"
    checkout.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, checkout / name)
    shutil.copytree(
        ROOT / "mcp_ref", checkout / "mcp_ref", ignore=shutil.ignore_patterns("__pycache__")
    )
    venv = tmp_path / "venv"
    # making a venv runs ensurepip: as slow as a pip install on a loaded machine
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=WAIT * 12)
    # the venv's own package, not a tree PYTHONPATH names (a worktree under test)
    clean_env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    python = str(venv / "bin" / "python")
    venv_purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
        env=clean_env,
    ).stdout.strip()
    ours = [
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        *site.getsitepackages(),
    ]
    (Path(venv_purelib) / "running_interpreter.pth").write_text(
        "\n".join(dict.fromkeys(ours)) + "\n"
    )
    commands = _commands(_block("git+https://git.example.com/you/mcp_ref.git"))
    assert [c.split()[:2] for c in commands] == [["pip", "install"]] * 4
    assert "No matching distribution" in README and '"mcp-ref @ file:///path/to/mcp_ref"' in README
    commands.append(
        'pip install "mcp-ref @ file:///path/to/mcp_ref"'
    )  # the requirements line the prose gives
    for command in commands:
        if "git+" in command and not (ROOT / ".git").exists():
            continue  # not a git checkout (an sdist): no URL to install from
        command = command.replace(
            "git+https://git.example.com/you/mcp_ref.git@main", f"git+file://localhost{ROOT}"
        ).replace("/path/to/mcp_ref", str(checkout))
        args = shlex.split(command)[2:]
        done = subprocess.run(
            [python, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", *args],
            capture_output=True,
            text=True,
            timeout=WAIT * 12,
            cwd=tmp_path,
            env=clean_env,
        )
        assert done.returncode == 0, (command, done.stderr)
        where = subprocess.run(
            [python, "-c", "import mcp_ref, mcp_ref.server; print(mcp_ref.server.__file__)"],
            capture_output=True,
            text=True,
            timeout=WAIT,
            cwd=tmp_path,
            env=clean_env,
        )
        assert where.returncode == 0 and where.stdout.startswith(str(tmp_path)), (
            command,
            where.stdout,
            where.stderr,
        )
        if "[auth" in command:
            from_venv = subprocess.run(
                [python, "-c", "import jwt, cryptography"], capture_output=True, timeout=WAIT
            )
            assert from_venv.returncode == 0, command
    command = subprocess.run(
        [str(venv / "bin" / "mcp-ref"), "--help"], capture_output=True, text=True, timeout=WAIT
    )
    assert command.returncode == 0 and "usage" in command.stdout.lower()


def _start(command: str, tmp_path, stdin=None) -> subprocess.Popen:
    return subprocess.Popen(
        ["bash", "-c", command],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen) -> None:
    """SIGINT to the command's process group (bash and what it started), then wait."""
    import signal

    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(WAIT)


def _answers(url: str) -> str:
    from mcp_ref import Client

    with Client.http(url, timeout=WAIT) as client:
        return client.call_tool("echo", {"text": "hi"}).content[0].text


@pytest.mark.slow
def test_http_deploy_commands_serve(tmp_path):
    """The "Over HTTP" shell block: the demo on the standard-library server, then (the secret
    exported as the block does) under gunicorn, each on a free port; both answer a call."""
    from http_fixtures import free_port
    from test_http_deploy import LineReader, wait_for_port

    serve, export, gunicorn = _commands(
        _block("gunicorn -k gthread -w 2 --threads 8 mcp_ref.workbench.demo:wsgi_app")
    )
    port = free_port()
    demo = _start(serve.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), tmp_path)
    try:
        LineReader(demo.stderr).wait_for("serving the demo")
        assert _answers(f"http://127.0.0.1:{port}/mcp") == "hi"
    finally:
        _stop(demo)
    port = free_port()
    script = f"{export}\nexport -p | grep -q 'MCP_REF_SECRET=\"[0-9a-f]\\{{64\\}}\"' || exit 9\nexec {gunicorn} -b 127.0.0.1:{port}"
    workers = _start(script, tmp_path)
    try:
        wait_for_port(port, workers)
        assert _answers(f"http://127.0.0.1:{port}/mcp") == "hi"
    finally:
        _stop(workers)


@pytest.mark.slow
def test_cli_commands_run(tmp_path):
    """The `mcp-ref` command block, line by line: TARGET is the demo on stdio, 8000 a demo over HTTP
    started for the test, `[...]` left out; `serve-demo` lines are started, answered, and stopped."""
    from http_fixtures import free_port
    from test_http_deploy import LineReader

    _write_server_example(tmp_path, docs=False)
    demo = shlex.quote(f"{sys.executable} -m mcp_ref serve-demo")
    # server-everything needs Node and the npm registry (tests/interop/test_interop.py runs it): the verb is run on the demo
    everything = '"npx -y @modelcontextprotocol/server-everything"'
    port = free_port()
    http_demo = _start(f"mcp-ref serve-demo --http 127.0.0.1:{port}", tmp_path)
    ran = []
    try:
        LineReader(http_demo.stderr).wait_for("serving the demo")
        for line in _commands(_block("mcp-ref call TARGET add a=1 b=2")):
            line = (
                re.sub(r"\s*\[[^]]*\]", "", line).replace("TARGET", demo).replace(everything, demo)
            )
            verbs = re.match(r"mcp-ref (\S+)", line).group(1).split("|")
            for verb in verbs:
                command = line.replace("|".join(verbs), verb, 1)
                if "serve-demo --http" in command:
                    other = free_port()
                    server = _start(
                        command.replace("127.0.0.1:8000", f"127.0.0.1:{other}"), tmp_path
                    )
                    try:
                        LineReader(server.stderr).wait_for("serving the demo")
                        if (
                            "--auth" in command
                        ):  # a protected resource: its metadata, and 401 without a token
                            import requests

                            base = f"http://127.0.0.1:{other}"
                            metadata = requests.get(
                                f"{base}/.well-known/oauth-protected-resource/mcp", timeout=WAIT
                            )
                            assert (
                                metadata.status_code == 200
                                and metadata.json()["authorization_servers"]
                            )
                            assert (
                                requests.post(f"{base}/mcp", json={}, timeout=WAIT).status_code
                                == 401
                            )
                        else:
                            assert _answers(f"http://127.0.0.1:{other}/mcp") == "hi"
                    finally:
                        _stop(server)
                elif command.startswith(
                    "mcp-ref serve-demo"
                ):  # stdio: answers a ping, ends with its input
                    done = subprocess.run(
                        ["bash", "-c", command],
                        input='{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
                        capture_output=True,
                        text=True,
                        timeout=WAIT * 3,
                        env=_env(tmp_path),
                    )
                    assert done.returncode == 0 and '"id":1' in done.stdout.replace(" ", ""), (
                        command,
                        done.stderr,
                    )
                else:
                    command = command.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
                    done = subprocess.run(
                        ["bash", "-c", command],
                        capture_output=True,
                        text=True,
                        timeout=WAIT * 3,
                        cwd=tmp_path,
                        env=_env(tmp_path),
                    )
                    assert done.returncode == 0, (command, done.stdout, done.stderr)
                ran.append(verb)
    finally:
        _stop(http_demo)
    assert {
        "info",
        "tools",
        "resources",
        "templates",
        "prompts",
        "call",
        "read",
        "prompt",
        "check",
        "serve-demo",
        "logout",
        "install",
    } <= set(ran)
