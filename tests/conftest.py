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

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_DIR = ROOT.parent / "shared" / "spec" / "schema"
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

_schemas: dict[str, dict] = {}
_validators: dict[tuple[str, str], object] = {}


def schema_available(version: str) -> bool:
    """True when ../shared/spec/schema/<version>.json exists."""
    return (SCHEMA_DIR / f"{version}.json").exists()


def require_schema(version: str) -> None:
    """Skip the calling test, with the reason, when the official schema of ``version`` is absent."""
    if not schema_available(version):
        pytest.skip(f"the official schema {SCHEMA_DIR / (version + '.json')} is not present (../shared/spec is absent)")


def validator(version: str, type_name: str):
    """A jsonschema validator for one type of the official schema of ``version`` (skips if it is absent)."""
    key = (version, type_name)
    if key not in _validators:
        require_schema(version)
        import jsonschema

        if version not in _schemas:
            _schemas[version] = json.loads((SCHEMA_DIR / f"{version}.json").read_text())
        root = _schemas[version]
        defs = "$defs" if "$defs" in root else "definitions"
        if type_name not in root[defs]:
            raise KeyError(f"{type_name} is not in the {version} schema")
        schema = dict(root)
        schema["$ref"] = f"#/{defs}/{type_name}"
        cls = jsonschema.validators.validator_for(root)
        _validators[key] = cls(schema)
    return _validators[key]


def schema_errors(version: str, type_name: str, instance) -> list[str]:
    """The schema violations of ``instance`` as ``type_name`` at ``version`` (empty: valid)."""
    return [f"{type_name}: {e.message} at /{'/'.join(map(str, e.absolute_path))}"
            for e in validator(version, type_name).iter_errors(instance)]


class WireChecker:
    """A ``trace`` hook that validates every message against the negotiated revision's schema.

    Requests are checked as their request type, results as the result type of
    the method they answer, notifications as their notification type, errors as
    JSON-RPC errors.  The version is learnt from the initialize result.
    Messages seen before it (initialize itself) are checked once it is known.
    """

    def __init__(self, version: str | None = None):
        self.version = version
        self.messages: list[tuple[str, dict]] = []
        self.errors: list[str] = []
        self.methods: dict[tuple[str, object], str] = {}
        self._backlog: list[tuple[str, dict]] = []
        self.lock = threading.Lock()

    def __call__(self, direction: str, data: bytes) -> None:
        message = json.loads(data)
        with self.lock:
            self.messages.append((direction, message))
            items = message if isinstance(message, list) else [message]
            for item in items:
                if self.version is None:
                    if isinstance(item, dict) and isinstance(item.get("result"), dict) and "protocolVersion" in item["result"]:
                        self.version = item["result"]["protocolVersion"]
                        backlog, self._backlog = self._backlog, []
                        for d, m in backlog:
                            self._check(d, m)
                    else:
                        self._backlog.append((direction, item))
                        continue
                self._check(direction, item)

    def _check(self, direction: str, msg) -> None:
        if not schema_available(self.version):
            return
        if not isinstance(msg, dict):
            return
        if "method" in msg and "id" in msg:
            self.methods[(direction, msg["id"])] = msg["method"]
            types = REQUEST_TYPES.get(msg["method"])
            if types:
                self.errors += schema_errors(self.version, types[0], msg)
        elif "method" in msg:
            name = NOTIFICATION_TYPES.get(msg["method"])
            if name:
                self.errors += schema_errors(self.version, name, msg)
        elif "result" in msg:
            other = "<--" if direction == "-->" else "-->"
            method = self.methods.get((other, msg.get("id")))
            types = REQUEST_TYPES.get(method)
            if types:
                self.errors += schema_errors(self.version, types[1], msg["result"])
        elif "error" in msg:
            name = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in _defs(self.version) else "JSONRPCError"
            if msg.get("id") is not None or self.version >= "2025-11-25":
                self.errors += schema_errors(self.version, name, msg)

    def sent(self, method: str | None = None) -> list[dict]:
        """Messages this side wrote (optionally only those with ``method``)."""
        return [m for d, m in self.messages if d == "-->" and (method is None or (isinstance(m, dict) and m.get("method") == method))]

    def received(self, method: str | None = None) -> list[dict]:
        """Messages this side read (optionally only those with ``method``)."""
        return [m for d, m in self.messages if d == "<--" and (method is None or (isinstance(m, dict) and m.get("method") == method))]

    def assert_valid(self) -> None:
        """Fail the test if any message broke the schema."""
        assert not self.errors, "messages not valid against the official schema:\n" + "\n".join(self.errors[:20])


def _defs(version: str) -> dict:
    validator(version, "JSONRPCRequest")
    root = _schemas[version]
    return root.get("$defs") or root.get("definitions")


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
