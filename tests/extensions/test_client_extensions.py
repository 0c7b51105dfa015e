"""Client extensions written by a third party from the public interface alone
(``from mcp_ref import Extension``), run against a real stdio server subprocess in both eras.

* ``Confirmer`` answers a method of its own that the server sends (``acme/confirm``) and declares a
  client capability saying so (handshake era: in ``initialize``; 2026-07-28: on every request);
* ``Recorder`` sees every request the client starts (its ``start_request``), takes an option of
  its own out of them (``note=``), and every request of the server's the client answers (its
  ``intercept_request``: the roots asked for, in both eras);
* ``Refuser`` refuses the server's roots request; the connection goes on.
"""

from __future__ import annotations

import ast
import io
import json
import re
import sys
import threading
import tokenize
from pathlib import Path

import pytest
from conftest import SERVERS, WAIT

from mcp_ref import Client, Extension, McpError

SERVER = [sys.executable, str(SERVERS / "client_extensions_server.py")]
CONFIRM = "acme/confirm"
ERAS = pytest.mark.parametrize("era", ["handshake", "modern"])


class Confirmer(Extension):
    """Answers ``acme/confirm`` (``{"question"}`` → ``{"confirmed", "question"}``) and declares it."""

    name = "acme confirmer"

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.host = None

    def setup(self, host) -> None:
        self.host = host

    def capabilities(self, version, peer=None):
        return {"experimental": {CONFIRM: {}}}

    def methods(self, version):
        return {CONFIRM: self.confirm}

    def confirm(self, connection, context, params) -> dict:
        self.asked.append(params["question"])
        return {"confirmed": True, "question": params["question"]}


class Recorder(Extension):
    """Records each request the client starts (with its ``note=`` option, which it takes out) and
    each request of the server's the client answers."""

    name = "recorder"

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []
        self.answered: list[str] = []
        self._lock = threading.Lock()

    def start_request(self, connection, method, params, options, start):
        note = options.pop("note", None)
        with self._lock:
            self.sent.append((method, note))
        return start(method, params, options)

    def intercept_request(self, call, proceed):
        with self._lock:
            self.answered.append(call.method)
        return proceed()


class Refuser(Extension):
    """Refuses the server's ``roots/list``."""

    name = "refuser"

    def intercept_request(self, call, proceed):
        if call.method == "roots/list":
            raise McpError("these roots are private", code=-1)
        return proceed()


@ERAS
def test_an_extension_declares_a_capability_and_answers_a_method_of_its_own(era):
    confirmer = Confirmer()
    with Client.stdio(
        SERVER, era=era, timeout=WAIT, stderr="discard", extensions=[confirmer]
    ) as client:
        assert confirmer.host is client  # setup(host) ran
        assert client.capabilities()["experimental"] == {CONFIRM: {}}
        seen = json.loads(client.call_tool("confirm", {"question": "ship it?"}).text)
    assert seen["era"] == era and seen["declared"] is True
    if era == "handshake":  # only the handshake era has requests of the server's own
        assert seen["answer"] == {"confirmed": True, "question": "ship it?"}
        assert confirmer.asked == ["ship it?"]
    else:
        assert seen["answer"] is None and confirmer.asked == []


def test_without_the_extension_the_method_is_not_found_and_nothing_is_declared():
    with Client.stdio(SERVER, era="handshake", timeout=WAIT, stderr="discard") as client:
        seen = json.loads(client.call_tool("confirm", {"question": "ship it?"}).text)
        assert seen == {"era": "handshake", "declared": False, "answer": None}
        with pytest.raises(TypeError):
            client.request("tools/list", None, note="unknown")  # no extension takes this option


@ERAS
def test_an_extension_sees_every_request_both_ways_and_takes_its_own_option(era):
    recorder = Recorder()
    with Client.stdio(
        SERVER, era=era, timeout=WAIT, stderr="discard", roots=["file:///work"]
    ) as client:
        client.add_extension(recorder)
        client.request("tools/list", None, note="first")
        assert json.loads(client.call_tool("roots").text) == ["file:///work"]
        client.ping()
    sent = [method for method, _note in recorder.sent]
    assert recorder.sent[0] == ("tools/list", "first")
    assert "tools/call" in sent and sent[-1] == ("server/discover" if era == "modern" else "ping")
    assert recorder.answered == [
        "roots/list"
    ]  # a request of the server's, or an inputRequests entry


class EndWatcher(Extension):
    """Records each ``connection_ended`` it is told, and fails at it (the next one is told all the same)."""

    name = "end watcher"

    def __init__(self) -> None:
        self.ended: list = []

    def connection_ended(self, connection) -> None:
        self.ended.append(connection)
        raise RuntimeError("an extension that fails at the end")


@ERAS
def test_a_clients_extensions_are_told_once_when_its_connection_ends(era):
    """A client's extensions were never told that its connection ended (a server's are, through
    ``Extension.connection_ended``): what one kept for the connection could only be let go by a
    thread of its own watching the session.  Now each is told once, by the time ``close()``
    returns, even after one before it raised."""
    first = EndWatcher()
    second = EndWatcher()
    client = Client.stdio(
        SERVER, era=era, timeout=WAIT, stderr="discard", extensions=[first, second]
    )
    assert first.ended == []
    client.close()
    assert first.ended == [client.connection]
    assert second.ended == [client.connection]


@ERAS
def test_a_refusal_reaches_the_server_and_the_connection_goes_on(era):
    with Client.stdio(
        SERVER,
        era=era,
        timeout=WAIT,
        stderr="discard",
        roots=["file:///work"],
        extensions=[Refuser()],
    ) as client:
        # Handshake era: the server's roots/list is answered with the error, which its tool call
        # then fails with; 2026-07-28: the client does not answer the inputRequests entry.
        with pytest.raises(McpError, match="these roots are private"):
            client.call_tool("roots")
        seen = json.loads(client.call_tool("confirm", {"question": "still there?"}).text)
        assert seen["era"] == era


# -- the client's protocol modules name no extension (issue 33) ---------------------------------

#: Words that name one of this package's extensions (a NAME token containing one is a mention).
EXTENSION_WORDS = re.compile(
    r"polic|rate.?limit|ratelimit|task|approval|redis|\bbus\b|oauth|wsgi|authoriz", re.I
)
#: The client's shorthand (mcp_ref.client.shorthand), the one module of the client that may name them.
SHORTHAND = "shorthand.py"


def stray_mentions(package: Path) -> list[str]:
    """``file:line: name`` for each mention of an extension in the client package ``package``
    outside its shorthand module (:data:`SHORTHAND`), and for each import of ``extras``, ``auth``
    or ``workbench`` there."""
    found = []
    for path in sorted(package.glob("*.py")):
        if path.name == SHORTHAND:
            continue
        text = path.read_text()
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NAME and EXTENSION_WORDS.search(token.string):
                found.append(f"{path.name}:{token.start[0]}: {token.string}")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                module = (node.module or "").removeprefix(
                    "mcp_ref."
                )  # from ..extras.x / mcp_ref.extensions.x
                if module.split(".")[0] in ("extras", "auth", "workbench"):
                    found.append(f"{path.name}:{node.lineno}: import {module}")
    return sorted(found)


def test_the_client_protocol_modules_name_no_extension_outside_the_shorthand():
    import mcp_ref.client

    package = Path(mcp_ref.client.__file__).parent
    assert (package / SHORTHAND).exists()
    assert stray_mentions(package) == []


def test_the_checker_finds_a_mention_and_an_import(tmp_path):
    (tmp_path / "connection.py").write_text(
        "def f(call):\n    from ..extras import thing\n    call.task_id = 1\n"
    )
    (tmp_path / SHORTHAND).write_text("from ..extras import approval\ntask_id = 1\n")
    assert stray_mentions(tmp_path) == [
        "connection.py:2: import extras",
        "connection.py:3: task_id",
    ]


# -- the example of docs/extensions-client.md ---------------------------------------------------


def docs_example() -> dict:
    """The names the last ``python`` block of docs/extensions-client.md defines."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "extensions-client.md").read_text()
    block = text.split("```python\n")[-1].split("```")[0]
    names: dict = {}
    exec(
        compile(block, "docs/extensions-client.md", "exec"), names
    )  # the test runs the docs' own code
    return names


@ERAS
def test_the_documented_audit_log_works_as_the_docs_say(era):
    audit = docs_example()["AuditLog"]()
    with Client.stdio(
        SERVER, era=era, timeout=WAIT, stderr="discard", roots=["file:///work"], extensions=[audit]
    ) as client:
        seen = json.loads(client.call_tool("confirm", {"question": "ship it?"}).text)
        client.call_tool("roots")
    assert seen["declared"] is True
    assert seen["answer"] == ({"confirmed": True} if era == "handshake" else None)
    assert audit.sent.count("tools/call") == 2
    assert audit.asked == (["acme/confirm", "roots/list"] if era == "handshake" else ["roots/list"])
