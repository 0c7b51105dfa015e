"""The transport contract (issue 33 item 5): five members, and a session that knows no era, no
task and no HTTP; and the custom transport of docs/transports.md, run as written."""

import ast
import re
import subprocess
import sys

from conftest import ROOT, WAIT

import mcp_ref.session
from mcp_ref import Client, Server
from mcp_ref.session import Transport

SESSION = mcp_ref.session.__file__
CONTRACT = {"read", "write", "close", "attach", "request_finished"}

#: Words the session's code may not use: an era (the handshake or the 2026-07-28 envelope, ping
#: which 2026-07-28 removed), a task, HTTP, or the HTTP client's records (``RequestFailed``,
#: ``RequestHeld``) and the hooks that left the contract.
FOREIGN = {
    "era",
    "eras",
    "modern",
    "handshake",
    "legacy",
    "envelope",
    "ping",
    "task",
    "tasks",
    "http",
    "https",
    "sse",
    "requestfailed",
    "requestheld",
    "concurrent_writes",
    "mirrors_headers",
    "stateless",
    "reinitialize",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def code_words(source: str) -> set[str]:
    """The words of a module's code: its names, attributes, arguments, imports and string literals
    (docstrings and comments left out), split at underscores, case changes and punctuation."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            texts.append(node.id)
        elif isinstance(node, ast.Attribute):
            texts.append(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            texts.append(node.name)
        elif isinstance(node, ast.arg):
            texts.append(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            texts.append(node.arg)
        elif isinstance(node, ast.alias):
            texts.extend(filter(None, (node.name, node.asname)))
        elif isinstance(node, ast.ImportFrom) and node.module:
            texts.append(node.module)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            texts.append(node.value)
    # whole names (RequestFailed), and their parts
    words = {text.lower() for text in texts if text.isidentifier()}
    for text in texts:
        for part in re.split(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])", text):
            if part:
                words.add(part.lower())
    return words


def test_the_transport_contract_has_at_most_five_members():
    members = {name for name in dir(Transport) if not name.startswith("_")}
    assert members == CONTRACT and len(members) <= 5


def test_the_session_names_no_era_no_task_and_no_http():
    words = code_words(open(SESSION).read())
    assert {"transport", "dispatcher", "progress"} <= words  # the words are really read
    assert words & FOREIGN == set()


def test_the_session_asks_a_transport_only_for_the_contract():
    tree = ast.parse(open(SESSION).read())
    asked = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and ast.unparse(node.value) in ("self.transport", "transport")
    }
    assert {"read", "write", "close"} <= asked <= CONTRACT


def test_code_words_finds_what_the_session_must_not_name():
    """The check above can fail: the session's former ping check, task test and HTTP records."""
    former = (
        "from .transport import RequestFailed\n"
        "def route(request):\n"
        '    if request.method == "ping" and not envelope.is_modern(request.params):\n'
        '        return "task" in request.params\n'
    )
    assert code_words(former) & FOREIGN == {"ping", "envelope", "modern", "task", "requestfailed"}


# -- docs/transports.md: a transport of one's own ------------------------------------------------


def _example() -> str:
    text = (ROOT / "docs" / "transports.md").read_text()
    (block,) = [
        b
        for b in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
        if "# socket_transport.py" in b
    ]
    return block


def test_the_socket_transport_example_runs_as_written():
    done = subprocess.run(
        [sys.executable, "-c", _example()], capture_output=True, text=True, timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["5"]


def test_the_socket_transport_serves_the_handshake_era_and_its_ping():
    import socket

    namespace: dict = {"__name__": "socket_transport"}
    # (running the example once more)
    exec(compile(_example(), "socket_transport.py", "exec"), namespace)
    socket_transport = namespace["SocketTransport"]
    server = Server("over-a-socket")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    server_end, client_end = socket.socketpair()
    with server_end, client_end:
        connection = server.connect(socket_transport(server_end))
        with Client(socket_transport(client_end), era="handshake", timeout=WAIT) as client:
            assert client.protocol_version == "2025-11-25"
            assert client.ping() is None  # answered by the server role, on its reader thread
            assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"
        assert connection.session.wait_closed(WAIT)


# -- the HTTP client: what its workers learn of a request reaches the session through read() ---------


class Told:
    """An ``OutgoingRequests`` that records what the transport tells it."""

    def __init__(self):
        self.told: list[tuple] = []

    def request_deadline(self, request_id):
        return None

    def fail_request(self, request_id, error):
        self.told.append(("failed", request_id, str(error)))

    def hold_request(self, request_id, seconds):
        self.told.append(("held", request_id, seconds))


def test_the_http_client_tells_the_session_of_a_held_or_failed_request_in_turn():
    from mcp_ref.http.bounded_reads import RequestFailed, sending
    from mcp_ref.http.client import HttpClientTransport, hold_current_request

    transport = HttpClientTransport("http://127.0.0.1:9/mcp")  # nothing is sent anywhere
    requests = Told()
    transport.attach(requests)
    try:
        sending.request = (transport, 7)  # as on the worker sending request 7
        hold_current_request(30.0)  # the auth hook: the user is in the browser
        answer = b'{"jsonrpc":"2.0","id":8,"result":{}}'
        transport._incoming.put(answer)
        transport._incoming.put(RequestFailed(8, ConnectionError("refused")))
        assert transport.read() == answer
        assert requests.told == [("held", 7, 30.0)]  # told before the message that came after it
        transport.close()
        assert transport.read() is None  # the failure was told on the way to the end of input
        assert requests.told == [("held", 7, 30.0), ("failed", 8, "refused")]
    finally:
        del sending.request
        transport.close()
