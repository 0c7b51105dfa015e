"""docs/authorization.md: its examples, run as pasted over real HTTP."""

import subprocess
import sys

import pytest
from conftest import ROOT, WAIT
from doc_blocks import block, run_python

PAGE = ROOT / "docs" / "authorization.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    "# oauth_client.py": "test_oauth_client_example_logs_in_to_the_protected_demo",
    "# protected_server.py": "test_protected_server_example_builds_a_protected_app",
}


def _block(marker: str) -> str:
    return block(PAGE, marker)


@pytest.mark.slow
def test_oauth_client_example_logs_in_to_the_protected_demo(tmp_path):
    """The page's OAuth client, against ``mcp-ref serve-demo --http --auth`` on the port it names."""
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
        done = run_python(
            _block("# oauth_client.py").replace("8000", str(port)),
            tmp_path,
            "oauth_client.py",
            timeout=WAIT * 3,
        )
        assert done.returncode == 0 and done.stdout == "signed in\n", done.stderr
        assert (tmp_path / "tokens.json").exists()
    finally:
        stop(demo, signal.SIGINT)


@pytest.mark.slow
def test_protected_server_example_builds_a_protected_app(tmp_path):
    """The page's protected server: its app serves the metadata and answers 401 without a token."""
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
