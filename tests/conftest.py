"""Shared test helpers: a wire checker that validates every message against the
official schema of the negotiated revision, a raw stdio peer for sending bad
bytes, and client factories over real subprocesses."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mcp_ref import schemas

ROOT = Path(__file__).resolve().parents[1]
SERVERS = Path(__file__).resolve().parent / "servers"
DEMO = [sys.executable, "-m", "mcp_ref", "serve-demo"]
WAIT = 10.0  # seconds: the bound of every blocking wait in the tests

# method -> (request type, result type) in the official schema.
REQUEST_TYPES = {
    "initialize": ("InitializeRequest", "InitializeResult"),
    "ping": ("PingRequest", "EmptyResult"),
    "tools/list": ("ListToolsRequest", "ListToolsResult"),
    "tools/call": ("CallToolRequest", "CallToolResult"),
    "resources/list": ("ListResourcesRequest", "ListResourcesResult"),
    "resources/templates/list": ("ListResourceTemplatesRequest", "ListResourceTemplatesResult"),
    "resources/read": ("ReadResourceRequest", "ReadResourceResult"),
    "resources/subscribe": ("SubscribeRequest", "EmptyResult"),
    "resources/unsubscribe": ("UnsubscribeRequest", "EmptyResult"),
    "prompts/list": ("ListPromptsRequest", "ListPromptsResult"),
    "prompts/get": ("GetPromptRequest", "GetPromptResult"),
    "logging/setLevel": ("SetLevelRequest", "EmptyResult"),
    "completion/complete": ("CompleteRequest", "CompleteResult"),
    "sampling/createMessage": ("CreateMessageRequest", "CreateMessageResult"),
    "roots/list": ("ListRootsRequest", "ListRootsResult"),
    "elicitation/create": ("ElicitRequest", "ElicitResult"),
}
NOTIFICATION_TYPES = {
    "notifications/initialized": "InitializedNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/roots/list_changed": "RootsListChangedNotification",
}

def schema_errors(version: str, type_name: str, instance) -> list[str]:
    """The schema violations of ``instance`` as ``type_name`` at ``version`` (empty: valid).

    The official schemas ship with mcp_ref (``mcp_ref.schemas``): an unknown
    version or type raises, it never passes silently.
    """
    return schemas.errors(version, type_name, instance)


class WireChecker:
    """A ``trace`` hook that validates every message against the negotiated revision's schema.

    Requests are checked as their request type, results as the result type of
    the method they answer, notifications as their notification type, errors as
    JSON-RPC errors.  The version is learnt from the initialize result.
    Messages seen before it (initialize itself) are checked once it is known.

    The schemas come from ``mcp_ref.schemas``, so there is always one to check
    against, except when a peer announces a revision that has none: then the
    revision the initialize request asked for is used, and if that has none
    either, the checker records an error (it never passes unchecked).
    """

    def __init__(self, version: str | None = None):
        self.version = version
        self.asked: str | None = None  # the protocolVersion of the initialize request
        self.messages: list[tuple[str, dict]] = []
        self.errors: list[str] = []
        self.methods: dict[tuple[str, object], str] = {}
        self._backlog: list[tuple[str, dict]] = []
        self._unchecked = False
        self.lock = threading.Lock()

    def __call__(self, direction: str, data: bytes) -> None:
        message = json.loads(data)
        with self.lock:
            self.messages.append((direction, message))
            items = message if isinstance(message, list) else [message]
            for item in items:
                if self.version is None:
                    if isinstance(item, dict) and item.get("method") == "initialize" and isinstance(item.get("params"), dict):
                        self.asked = item["params"].get("protocolVersion")
                    if isinstance(item, dict) and isinstance(item.get("result"), dict) and "protocolVersion" in item["result"]:
                        self.version = item["result"]["protocolVersion"]
                        backlog, self._backlog = self._backlog, []
                        for d, m in backlog:
                            self._check(d, m)
                    else:
                        self._backlog.append((direction, item))
                        continue
                self._check(direction, item)

    @property
    def schema_version(self) -> str | None:
        """The revision whose schema the messages are checked against (None: none applies)."""
        for version in (self.version, self.asked):
            if version in schemas.VERSIONS:
                return version
        return None

    def _check(self, direction: str, msg) -> None:
        version = self.schema_version
        if version is None:
            if not self._unchecked:  # said once, and the test fails: nothing passes unchecked
                self.errors.append(f"protocol version {self.version!r} has no official schema: its messages cannot be checked")
            self._unchecked = True
            return
        if not isinstance(msg, dict):
            return
        if "method" in msg and "id" in msg:
            self.methods[(direction, msg["id"])] = msg["method"]
            types = REQUEST_TYPES.get(msg["method"])
            if types:
                self.errors += schema_errors(version, types[0], msg)
        elif "method" in msg:
            name = NOTIFICATION_TYPES.get(msg["method"])
            if name:
                self.errors += schema_errors(version, name, msg)
        elif "result" in msg:
            other = "<--" if direction == "-->" else "-->"
            method = self.methods.get((other, msg.get("id")))
            types = REQUEST_TYPES.get(method)
            if types:
                self.errors += schema_errors(version, types[1], msg["result"])
        elif "error" in msg:
            name = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in schemas.type_names(version) else "JSONRPCError"
            if msg.get("id") is not None or version >= "2025-11-25":
                self.errors += schema_errors(version, name, msg)

    def sent(self, method: str | None = None) -> list[dict]:
        """Messages this side wrote (optionally only those with ``method``)."""
        return [m for d, m in self.messages if d == "-->" and (method is None or (isinstance(m, dict) and m.get("method") == method))]

    def received(self, method: str | None = None) -> list[dict]:
        """Messages this side read (optionally only those with ``method``)."""
        return [m for d, m in self.messages if d == "<--" and (method is None or (isinstance(m, dict) and m.get("method") == method))]

    def assert_valid(self) -> None:
        """Fail the test if any message broke the schema."""
        assert not self.errors, "messages not valid against the official schema:\n" + "\n".join(self.errors[:20])


@pytest.fixture
def wire():
    """A fresh WireChecker; after the test, every message it saw must be schema-valid."""
    checker = WireChecker()
    yield checker
    checker.assert_valid()


@pytest.fixture
def connect(wire):
    """Factory: ``connect(command=DEMO, **client_options)`` -> an initialized stdio Client.

    Every message is validated against the negotiated revision's schema (via
    the ``wire`` fixture); clients are closed after the test.
    """
    from mcp_ref import Client

    clients = []

    def factory(command=None, **options):
        options.setdefault("timeout", WAIT)
        options.setdefault("stderr", "capture")
        client = Client.stdio(command or DEMO, trace=wire, **options)
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


class RawPeer:
    """A server subprocess driven with raw bytes, for malformed-input tests.

    ``send(bytes)`` writes exactly those bytes; ``recv()`` returns the next
    decoded line (waiting at most WAIT seconds).
    """

    def __init__(self, command=None, env=None):
        self.proc = subprocess.Popen(
            command or DEMO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[bytes] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(iter(self.proc.stderr.readline, b"")), daemon=True).start()

    def _pump(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send_json(self, message) -> None:
        self.send(json.dumps(message).encode() + b"\n")

    def recv(self, timeout: float = WAIT):
        line = self.lines.get(timeout=timeout)
        return None if line is None else json.loads(line)

    def initialize(self, version: str = "2025-11-25") -> dict:
        self.send_json({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        reply = self.recv()
        self.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self) -> int:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for pipe in (self.proc.stdout, self.proc.stderr):
                try:
                    pipe.close()  # the pump threads have seen end of file once the process is gone
                except (OSError, ValueError):
                    pass


@pytest.fixture
def raw_peer():
    """Factory for RawPeer; every peer is shut down after the test."""
    peers = []

    def factory(command=None, env=None):
        peer = RawPeer(command, env)
        peers.append(peer)
        return peer

    yield factory
    for peer in peers:
        peer.close()


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``python -m mcp_ref ARGS``; whatever happens, no traceback on stderr."""
    proc = subprocess.run([sys.executable, "-m", "mcp_ref", *args], capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def check_trace(stderr: str) -> WireChecker:
    """A WireChecker fed every ``--> {json}`` / ``<-- {json}`` line of a ``--trace`` run's stderr."""
    checker = WireChecker()
    for line in stderr.splitlines():
        if line.startswith(("--> ", "<-- ")):
            checker(line[:3], line[4:].encode())
    return checker


def live_group_members(pgid: int) -> list[int]:
    """The pids in process group ``pgid`` still running (zombies are dead, merely unreaped)."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc to list a process group")
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members
