"""Shared test helpers: a wire checker that validates every message against the
official schema of the negotiated revision, a raw stdio peer for sending bad
bytes, and client factories over real subprocesses or in the same process
(``InMemory``: for tests that need no subprocess, through ``Client.in_memory``).

Waiting and threads: ``Collector`` (a callback that records its calls; tests
wait on it), ``run_threads`` / ``Workers`` (threads whose failures fail the
test, all of them listed), ``client_pool`` (module-scoped stdio clients, one per
revision).  Every blocking wait is bounded by ``WAIT``.

Server stderr: a test that fails shows the stderr of every server it started
(``watch_stderr``, fed by ``connect``, ``raw_peer``, ``client_pool`` and the
subprocess servers of the test modules) as a "server stderr (...)" section.

The ``mcp-ref`` command: ``run_cli`` runs it in this process (``cli.main``, output
captured), ``run_cli_process`` as ``python -m mcp_ref``.  The official SDK's HTTP
servers (``sdk_streamable``, ``sdk_stateless``, ``sdk_sse``) start once per test run
(per xdist worker; their tests are grouped on one worker).  The ``slow`` marker
(pyproject.toml) marks the tests that start a server subprocess, gunicorn, a terminal, an interop
peer, a wheel build or a child pytest, or take more than ~0.3 s of CPU: ``-m "not slow"`` is the
fast tier, the protocol in process.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from mcp_ref import schemas
from mcp_ref.workbench.wire_check import WireValidator

ROOT = Path(__file__).resolve().parents[1]
SERVERS = Path(__file__).resolve().parent / "servers"
DEMO = [sys.executable, "-m", "mcp_ref", "serve-demo"]
WAIT = 10.0  # seconds: the bound of every blocking wait in the tests

# Ctrl-C stops the servers the tests start (they are stopped with SIGINT, as a user stops them).  A
# suite started in the background by a shell without job control (`cmd &` in a script) inherits
# SIGINT ignored, and so would every server it starts: an ignored signal stays ignored across exec.
# Each test process (xdist's workers too) takes SIGINT back, so its children start with it.
if (
    signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    and threading.current_thread() is threading.main_thread()
):
    signal.signal(signal.SIGINT, signal.default_int_handler)


def outcome_within(job: Callable[[], Any], seconds: float = WAIT) -> Any:
    """Run ``job()`` on a thread: its result, or the exception it raised, within ``seconds``."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = job()
        except BaseException as exc:  # handed to the test
            outcome["value"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert "value" in outcome, f"still waiting after {seconds} s"
    return outcome["value"]


def wait_pipe_full(fd: int) -> None:
    """Wait (bounded) until the pipe of ``fd`` is full: the bytes in it (Linux FIONREAD, which
    counts both ends of a pipe) within a page of its size.  No event tells either end."""
    import array
    import fcntl
    import termios

    size = fcntl.fcntl(fd, 1032)  # F_GETPIPE_SZ
    held = array.array("i", [0])
    deadline = time.monotonic() + WAIT
    while held[0] < size - 4096:
        assert time.monotonic() < deadline, f"the pipe holds {held[0]} of {size} bytes"
        time.sleep(0.02)
        fcntl.ioctl(fd, termios.FIONREAD, held)


class InMemory:
    """A test server to run in the test's own process: ``connect(InMemory("feature_client"))``.

    ``script`` names a file in tests/servers/ (or, dotted, an importable module:
    ``InMemory("mcp_ref.workbench.demo", "build_server")``); ``factory`` the function there
    that builds the Server (called with ``args``), a fresh one for every
    connection, as a subprocess would be.  The client reaches it through
    ``Client.in_memory``.
    """

    _modules: dict = {}
    _lock = threading.Lock()

    def __init__(self, script: str, factory: str = "build", *args):
        self.script, self.factory, self.args = script, factory, args

    def build(self):
        """A new Server from the script."""
        import importlib
        import importlib.util

        if "." in self.script:
            return getattr(importlib.import_module(self.script), self.factory)(*self.args)
        with self._lock:
            module = self._modules.get(self.script)
            if module is None:
                spec = importlib.util.spec_from_file_location(
                    f"test_server_{self.script}", SERVERS / f"{self.script}.py"
                )
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                self._modules[self.script] = module
        return getattr(module, self.factory)(*self.args)

    def __repr__(self) -> str:
        return f"InMemory({self.script}.{self.factory}{self.args!r})"


#: The demo server in the test's own process (the same server ``DEMO`` runs as a subprocess).
DEMO_IN_PROCESS = InMemory("mcp_ref.workbench.demo", "build_server")


def schema_errors(version: str, type_name: str, instance) -> list[str]:
    """The schema violations of ``instance`` as ``type_name`` at ``version`` (empty: valid).

    The official schemas ship with mcp_ref (``mcp_ref.schemas``): an unknown
    version or type raises, it never passes silently.
    """
    return schemas.errors(version, type_name, instance)


class WireChecker(WireValidator):
    """mcp_ref's :class:`~mcp_ref.workbench.wire_check.WireValidator`, with what tests ask of a conversation."""

    def sent(self, method: str | None = None) -> list[dict]:
        """Messages this side wrote (optionally only those with ``method``)."""
        return [
            m
            for d, m in self.messages
            if d == "-->"
            and (method is None or (isinstance(m, dict) and m.get("method") == method))
        ]

    def received(self, method: str | None = None) -> list[dict]:
        """Messages this side read (optionally only those with ``method``)."""
        return [
            m
            for d, m in self.messages
            if d == "<--"
            and (method is None or (isinstance(m, dict) and m.get("method") == method))
        ]

    def assert_valid(self) -> None:
        """Fail the test if any message broke the schema."""
        assert not self.errors, "messages not valid against the official schema:\n" + "\n".join(
            self.errors[:20]
        )


@pytest.fixture
def wire():
    """A fresh WireChecker; after the test, every message it saw must be schema-valid."""
    checker = WireChecker()
    yield checker
    checker.assert_valid()


@pytest.fixture
def connect(wire):
    """Factory: ``connect(command=DEMO, **client_options)`` -> an initialized Client.

    ``command`` is a stdio server's command line, or an :class:`InMemory` server
    (run in this process).  Every message is validated against the negotiated
    revision's schema (via the ``wire`` fixture); clients are closed after the
    test.  A stdio server's stderr is collected (unless ``stderr=`` is given)
    and shown if the test fails.
    """
    from mcp_ref import Client

    clients = []

    def factory(command=None, **options):
        command = command or DEMO
        options.setdefault("timeout", WAIT)
        if isinstance(command, InMemory):
            client = Client.in_memory(command.build(), trace=wire, **options)
            clients.append(client)
            return client
        if "stderr" not in options:
            # Collected from the start, so that a server which dies while starting is shown too.
            options["stderr"] = lines = Collector()
            watch_stderr(command_label(command), lambda: lines.items)
        client = Client.stdio(command, trace=wire, **options)
        if options["stderr"] == "capture":
            watch_stderr(
                command_label(command), lambda: list(client.session.transport.stderr_lines)
            )
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


def client_over(kind: str, server: InMemory, serve, *, trace, **options):
    """A Client of the test server ``server`` (tests/servers/<script>.py) over ``kind``: ``"stdio"``
    (its script as a subprocess), ``"http"`` (served on 127.0.0.1 by the ``serve`` fixture, with a
    short SSE keep-alive) or ``"memory"``.  The caller closes it."""
    from mcp_ref import Client

    options.setdefault("timeout", WAIT)
    if kind == "stdio":
        return Client.stdio(
            [sys.executable, str(SERVERS / f"{server.script}.py")],
            trace=trace,
            stderr="discard",
            **options,
        )
    if kind == "http":
        return Client.http(serve(server.build(), keepalive=0.2).mcp, trace=trace, **options)
    return Client.in_memory(server.build(), trace=trace, **options)


def handshake_era(factory):
    """``connect`` pinned to the handshake era (unless the test pins a revision itself): for a
    module that tests what only the handshake era has (server-to-client requests, ping, the
    session's lifecycle).  The 2026-07-28 era has its own tests (test_modern_client.py)."""

    def connect(command=None, **options):
        if "protocol_version" not in options:
            options.setdefault("era", "handshake")
        return factory(command, **options)

    return connect


class RawPeer:
    """A server subprocess driven with raw bytes, for malformed-input tests.

    ``send(bytes)`` writes exactly those bytes; ``recv()`` returns the next
    decoded line (waiting at most WAIT seconds).  ``stderr`` collects the
    server's stderr lines (bytes); ``stderr_done`` is set when it has ended.
    """

    def __init__(self, command=None, env=None):
        self.proc = subprocess.Popen(
            command or DEMO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[bytes] = []
        self.stderr_done = (
            threading.Event()
        )  # set once stderr has ended and every line is in ``stderr``
        self._pumps = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    def _pump(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            self.stderr.append(line)
        self.stderr_done.set()

    def send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send_json(self, message) -> None:
        self.send(json.dumps(message).encode() + b"\n")

    def recv(self, timeout: float = WAIT):
        line = self.lines.get(timeout=timeout)
        return None if line is None else json.loads(line)

    def initialize(self, version: str = "2025-11-25") -> dict:
        self.send_json(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        )
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
            # The process is gone, but its last lines may still be in the pipes: closing them under
            # a pump that has not read them yet (a busy machine) would lose them.  Each pump ends
            # at the end of file; bounded, for a pipe a child of the server still holds open.
            for pump in self._pumps:
                pump.join(WAIT)
            for pipe in (self.proc.stdout, self.proc.stderr):
                try:
                    pipe.close()
                except (OSError, ValueError):
                    pass


@pytest.fixture
def raw_peer():
    """Factory for RawPeer; every peer is shut down after the test, and its stderr shown if the test fails."""
    peers = []

    def factory(command=None, env=None):
        peer = RawPeer(command, env)
        peers.append(peer)
        watch_stderr(command_label(command or DEMO), lambda: list(peer.stderr))
        return peer

    yield factory
    for peer in peers:
        peer.close()


class _Output:
    """A text stream that collects what is written to it: stdout or stderr of an in-process command
    run.  Not a terminal, as a pipe is not.  What a thread of ``others`` writes (the threads that
    were running before the command started: another test's leftovers, such as a lease thread
    logging through ``logging.lastResort``) goes on to ``elsewhere``, the stream the capture
    replaced, and never into the command's output.  So does what such a thread writes on the
    command's behalf (a process-wide thread, such as the HTTP server's peer watcher logging a
    failed disconnect callback): a test that needs that runs the command as a subprocess
    (:func:`run_cli_process`)."""

    def __init__(self, elsewhere: Any = None, others: Iterable[threading.Thread] = ()):
        self._parts: list[str] = []
        self._lock = threading.Lock()
        self._elsewhere = elsewhere
        self._others = set(others)

    def write(self, text: str) -> int:
        if self._elsewhere is not None and threading.current_thread() in self._others:
            return self._elsewhere.write(text)
        with self._lock:
            self._parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        import io

        raise io.UnsupportedOperation("an in-process capture has no file descriptor")

    @property
    def encoding(self) -> str:
        return "utf-8"

    def getvalue(self) -> str:
        with self._lock:
            return "".join(self._parts)


_cli_runs = threading.Lock()  # one in-process command at a time: each swaps the process's sys.std*


def run_cli(*args: str, timeout: float = 60, stdin: str = "") -> subprocess.CompletedProcess:
    """Run the ``mcp-ref`` command with ARGS in this process: ``mcp_ref.workbench.cli.main(ARGS)``,
    stdin a pipe holding ``stdin``, stdout and stderr captured (never a terminal), bounded by
    ``timeout`` seconds.  The result reads like a finished subprocess (``returncode``, ``stdout``,
    ``stderr``).  Whatever happens, no traceback on stderr (an exception out of ``main`` fails the
    test with its own).  :func:`run_cli_process` runs the real ``python -m mcp_ref``."""
    import io

    from mcp_ref.workbench.cli import main

    outcome: dict = {}

    def run() -> None:
        try:
            outcome["code"] = main(list(args))
        except BaseException as exc:
            outcome["error"] = exc

    with _cli_runs:
        others = threading.enumerate()  # what they write is not the command's (see _Output)
        out, err = _Output(sys.stdout, others), _Output(sys.stderr, others)
        saved = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, err
        try:
            thread = threading.Thread(target=run, name="mcp-ref-main", daemon=True)
            thread.start()
            thread.join(timeout)
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
    assert not thread.is_alive(), (
        f"mcp-ref {' '.join(args)} still running after {timeout} s:\n{err.getvalue()}"
    )
    if "error" in outcome:
        raise outcome["error"]
    proc = subprocess.CompletedProcess(
        ["mcp-ref", *args], outcome["code"], out.getvalue(), err.getvalue()
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def run_cli_process(
    *args: str,
    timeout: float = 60,
    stdin: str | None = None,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """Run ``python -m mcp_ref ARGS`` as a subprocess (stdin: ``stdin``, or empty); whatever happens,
    no traceback on stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_ref", *args],
        input=stdin or "",
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
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


def wait_gone(pid: int, timeout: float = WAIT) -> bool:
    """Wait until process ``pid`` has ended, whoever's child it is (one that is not ours has no
    ``wait()``): its pidfd becomes readable then (Linux 5.3).  True once it has (a zombie has
    ended), False past ``timeout``."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


# -- waiting on callbacks -------------------------------------------------------------------------


#: ``python -m mcp_ref`` as a command run from a terminal starts it: with SIGHUP at its default
#: action and Ctrl-C raising KeyboardInterrupt even when this test run ignores them (under
#: ``nohup``, in a background job; the command would keep them ignored: ``StopSignals``).  A shim
#: rather than ``preexec_fn``, which is not safe with threads running.
MCP_REF_FROM_A_TERMINAL = [
    sys.executable,
    "-c",
    "import runpy, signal; signal.signal(signal.SIGHUP, signal.SIG_DFL); "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('mcp_ref', run_name='__main__', alter_sys=True)",
]


class LoggedOnce(logging.Handler):
    """A logging handler that sets :attr:`seen` once a record's message holds ``words``."""

    def __init__(self, words: str):
        super().__init__()
        self.words = words
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.words in record.getMessage():
            self.seen.set()


class WatchedLock(threading.Condition):
    """A lock that wakes its waiters each time it is let go (:func:`watch_lock`)."""

    def __init__(self) -> None:
        super().__init__(threading.RLock())

    def __exit__(self, *exc) -> None:
        self.notify_all()
        super().__exit__(*exc)


def watch_lock(owner: object, name: str = "_lock") -> Callable[[Callable[[], bool]], bool]:
    """Put a :class:`WatchedLock` in place of ``owner``'s own lock (attribute ``name``; before any
    thread takes it): each change ``owner`` makes under it wakes the waits of the function
    returned, ``until(predicate, timeout=WAIT)``, True once ``predicate()`` holds.  For state the
    library keeps under a lock (counts of requests, of connections) and tells no one of."""
    lock = WatchedLock()
    setattr(owner, name, lock)

    def until(predicate: Callable[[], bool], timeout: float = WAIT) -> bool:
        with lock:
            return lock.wait_for(predicate, timeout)

    return until


class Collector:
    """A callback that records every call, for tests to wait on (bounded) instead of sleeping.

    Each call becomes one item: its argument, or the tuple of its arguments
    when there are several.  A Collector reads like a list of its items (``len``,
    indexing, ``in``, iteration; ``items`` is a copy), so it can stand in for
    ``list.append`` as ``on_log=``, ``on_progress=``, ``stderr=`` and the like.
    """

    def __init__(self):
        self._items: list = []
        self._cond = threading.Condition()

    def __call__(self, *args) -> None:
        with self._cond:
            self._items.append(args[0] if len(args) == 1 else args)
            self._cond.notify_all()

    @property
    def items(self) -> list:
        """A copy of every item so far."""
        with self._cond:
            return list(self._items)

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def __getitem__(self, index):
        with self._cond:
            return self._items[index]

    def __iter__(self):
        return iter(self.items)

    def __contains__(self, item) -> bool:
        return item in self.items

    def __repr__(self) -> str:
        return f"Collector({self.items!r})"

    def mark(self) -> int:
        """The number of items so far: pass it as ``since`` to look only at later ones."""
        return len(self)

    def since(self, mark: int) -> list:
        """The items after the first ``mark``."""
        with self._cond:
            return list(self._items[mark:])

    def wait_until(
        self, predicate: Callable[[list], bool], *, since: int = 0, timeout: float = WAIT
    ) -> list:
        """Wait until ``predicate(items[since:])`` holds and return those items; fail after ``timeout`` s."""
        with self._cond:
            ok = self._cond.wait_for(lambda: predicate(self._items[since:]), timeout)
            got = list(self._items[since:])
        assert ok, f"condition not met within {timeout} s; received {got!r}"
        return got

    def wait_for(self, n: int = 1, *, since: int = 0, timeout: float = WAIT) -> list:
        """Wait until at least ``n`` items arrived (after ``since``) and return them all; fail after ``timeout`` s."""
        return self.wait_until(lambda items: len(items) >= n, since=since, timeout=timeout)


# -- threads --------------------------------------------------------------------------------------


class Workers:
    """``n`` daemon threads each running ``target(i)`` (i = 0..n-1), whose failures fail the test.

    ``start()`` them, do what the test needs while they run, then ``join()``:
    it returns their results in order, or fails listing every exception and
    every thread still running once ``timeout`` has passed (the first exception
    chained, for its traceback).  ``run_threads`` does both at once.
    """

    def __init__(self, target: Callable[[int], object], n: int):
        self.target = target
        self.results: list = [None] * n
        self.failures: list[tuple[int, BaseException]] = []
        self._lock = threading.Lock()
        name = getattr(target, "__name__", "worker")
        self.threads = [
            threading.Thread(target=self._run, args=(i,), name=f"{name}-{i}", daemon=True)
            for i in range(n)
        ]

    def _run(self, i: int) -> None:
        try:
            self.results[i] = self.target(i)
        except BaseException as exc:
            with self._lock:
                self.failures.append((i, exc))

    def start(self) -> Workers:
        """Start every thread; returns self."""
        for thread in self.threads:
            thread.start()
        return self

    def join(self, timeout: float = WAIT) -> list:
        """Wait (``timeout`` s in all) for every thread; their results, or an AssertionError naming each problem."""
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [i for i, thread in enumerate(self.threads) if thread.is_alive()]
        with self._lock:
            failures = sorted(self.failures, key=lambda pair: pair[0])
        if not failures and not stuck:
            return list(self.results)
        problems = [f"thread {i} failed{_where(exc)}: {_one_line(exc)}" for i, exc in failures]
        problems += [f"thread {i} still running after {timeout} s" for i in stuck]
        summary = (
            f"{len(failures)} of {len(self.threads)} threads failed, {len(stuck)} did not finish:\n"
        )
        raise AssertionError(summary + "\n".join(problems)) from (
            failures[0][1] if failures else None
        )


def run_threads(target: Callable[[int], object], n: int, *, timeout: float = WAIT) -> list:
    """Run ``target(i)`` in ``n`` threads at once and return the results in order.

    Fails the test, listing every exception and every thread still running
    after ``timeout`` seconds (see :class:`Workers`).
    """
    return Workers(target, n).start().join(timeout)


def _one_line(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text.replace("\n", "\n    ")


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""


# -- client pools ---------------------------------------------------------------------------------


class PoolPeer:
    """One client connection of a pool: ``client``, its ``wire`` checker and a Collector per callback.

    ``logs`` (on_log), ``updates`` (on_resource_updated), ``changes``
    (on_list_changed) and ``stderr`` (the server's stderr lines).
    """

    def __init__(self, command, version: str, **options):
        from mcp_ref import Client

        self.wire = WireChecker()
        self.logs = Collector()
        self.updates = Collector()
        self.changes = Collector()
        self.stderr = Collector()
        self.unwatch = watch_stderr(
            f"{command_label(command)}, {version}", lambda: self.stderr.items, keep=True
        )
        options.setdefault("timeout", WAIT)
        try:
            self.client = Client.stdio(
                command,
                protocol_version=version,
                trace=self.wire,
                stderr=self.stderr,
                on_log=self.logs,
                on_resource_updated=self.updates,
                on_list_changed=self.changes,
                **options,
            )
        except BaseException:
            self.unwatch()  # shown for this test only: the pool never holds this peer
            raise


class ClientPool:
    """Stdio clients of one server command shared by a test module, one per (revision, label).

    Made by the fixtures of :func:`client_pool`.  Every message is checked
    against the official schema of its revision; each test's messages must be
    valid when it ends (an autouse fixture checks every live pool).
    """

    def __init__(self, command):
        self.command = command
        self.peers: dict[tuple, PoolPeer] = {}
        self._lock = threading.Lock()

    def peer(self, version: str | None = None, label: str = "", **options) -> PoolPeer:
        """The pool's connection for ``version`` (the latest by default; started on first use; ``label`` keeps variants apart)."""
        from mcp_ref import LATEST_VERSION

        key = (version or LATEST_VERSION, label)
        with self._lock:
            if key not in self.peers:
                self.peers[key] = PoolPeer(self.command, key[0], **options)
            return self.peers[key]

    def client(self, version: str | None = None, **options):
        """The Client of :meth:`peer`."""
        return self.peer(version, **options).client

    def snapshot(self) -> dict:
        """How many schema errors each connection has seen so far."""
        with self._lock:
            return {key: len(p.wire.errors) for key, p in self.peers.items()}

    def assert_valid_since(self, snapshot: dict) -> None:
        """Fail if any message since ``snapshot`` broke the official schema."""
        with self._lock:
            new = [
                e for key, p in self.peers.items() for e in p.wire.errors[snapshot.get(key, 0) :]
            ]
        assert not new, "messages not valid against the official schema:\n" + "\n".join(new[:20])

    def close(self) -> None:
        """Close every client, then fail if any message of any of them broke the schema."""
        for p in self.peers.values():
            p.client.close()
            p.unwatch()
        for p in self.peers.values():
            p.wire.assert_valid()


_live_pools: list[ClientPool] = []


def client_pool(command: Sequence[str] | Callable[..., Sequence[str]], *, scope: str = "module"):
    """Make a fixture giving a :class:`ClientPool` of the server ``command``, closed at the end of ``scope``.

    Assign it in a test module under the fixture's name::

        pool = client_pool([sys.executable, str(SERVERS / "feature_tools.py")])

    ``command`` may be a function of other fixtures, named by its parameters:
    ``client_pool(lambda tree: [sys.executable, str(SCRIPT), str(tree)])``.
    """
    needs = list(inspect.signature(command).parameters) if callable(command) else []

    def pool_fixture(request):
        argv = (
            command(*(request.getfixturevalue(name) for name in needs))
            if callable(command)
            else command
        )
        pool = ClientPool(argv)
        _live_pools.append(pool)
        try:
            yield pool
        finally:
            _live_pools.remove(pool)
            pool.close()

    what = (
        "a server made from the fixtures " + ", ".join(needs)
        if callable(command)
        else command_label(command)
    )
    pool_fixture.__doc__ = f"A ClientPool of {what}, shared by the tests of one {scope}."
    return pytest.fixture(scope=scope)(pool_fixture)


@pytest.fixture(autouse=True)
def _pools_stay_schema_valid():
    """Every message a live client pool carried during a test must be valid when the test ends."""
    before = {id(pool): pool.snapshot() for pool in _live_pools}
    yield
    for pool in list(_live_pools):
        pool.assert_valid_since(before.get(id(pool), {}))


# -- server stderr in the report of a failing test ------------------------------------------------


def command_label(command) -> str:
    """A short form of a server command: ``python`` for this interpreter, paths relative to the project."""
    words = []
    for arg in command if not isinstance(command, (str, bytes)) else [command]:
        word = str(arg)
        if word == sys.executable:
            word = "python"
        else:
            try:
                word = str(Path(word).relative_to(ROOT))
            except ValueError:
                pass
        words.append(word)
    return " ".join(words)


class _Watched:
    def __init__(self, label: str, read: Callable[[], object], keep: bool):
        self.label, self.read, self.keep = label, read, keep
        self.start = 0  # lines written before the running test began

    def lines(self) -> list[str]:
        got = self.read()
        if isinstance(got, (str, bytes)):
            got = got.splitlines()
        return [
            (line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)).rstrip(
                "\r\n"
            )
            for line in got
        ]


_watched: list[_Watched] = []
_SHOWN = pytest.StashKey[bool]()


def watch_stderr(
    label: str, read: Callable[[], object], *, keep: bool = False
) -> Callable[[], None]:
    """Show a server's stderr in the report of a test that fails, as a section "server stderr (<label>)".

    ``read()`` returns what the server wrote so far: a str, bytes, or a list of
    lines (str or bytes).  Watched from a test or a function-scoped fixture,
    the server is shown for that test.  With ``keep=True`` (a module-scoped
    server) it is watched for every later test too, each report showing only
    the lines written since that test began, until the returned function is
    called.
    """
    watched = _Watched(label, read, keep)
    _watched.append(watched)

    def unwatch() -> None:
        watched.keep = False  # still shown if the running test fails; dropped before the next one

    return unwatch


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before a test's fixtures run: forget the last test's servers, note where the kept ones stand."""
    _watched[:] = [w for w in _watched if w.keep]
    for watched in _watched:
        try:
            watched.start = len(watched.lines())
        except Exception:
            watched.start = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The first failing report of a test (setup, call or teardown) gets a section per watched server."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or item.stash.get(_SHOWN, False):
        return
    item.stash[_SHOWN] = True
    seen: dict[str, int] = {}
    for watched in list(_watched):
        try:
            text = "\n".join(watched.lines()[watched.start :])
        except Exception as exc:
            text = f"(could not read it: {exc!r})"
        if not text:
            continue
        seen[watched.label] = seen.get(watched.label, 0) + 1
        suffix = f" #{seen[watched.label]}" if seen[watched.label] > 1 else ""
        report.sections.append((f"server stderr ({watched.label}){suffix}", text))


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (the default, pyproject.toml): twice the CPUs, 2 to 8 workers.  Most tests wait on a
    subprocess, a socket or a bounded timeout rather than compute, so two workers a core keep the
    cores busy, the fast tier's too (``-m "not slow"``: 55 s on two cores, against 70 s with one
    worker a core, though each worker collects every test module again)."""
    cpus = os.cpu_count() or 1
    return max(2, min(8, 2 * cpus))


# -- server subprocesses shared by a whole test run ----------------------------------------------

#: Seconds a server subprocess may take to start accepting connections.
STARTUP = 20.0
SDK_HTTP_SERVER = [sys.executable, str(SERVERS / "interop_http_sdk_server.py")]


class ServerProcess:
    """A server subprocess listening on 127.0.0.1:``port``; stderr goes to ``log``."""

    def __init__(self, command: list[str], port: int, log):
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self._errfile = open(log, "wb")
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._errfile,
            cwd=ROOT,
        )
        # Shared by many tests: shown (what it wrote meanwhile) in the report of any test that fails.
        self.unwatch = watch_stderr(
            command_label(command), lambda: self.log.read_bytes(), keep=True
        )
        try:
            self._wait_for_port()
        except BaseException:
            self.stop()
            raise

    def _wait_for_port(self) -> None:
        import socket

        deadline = time.monotonic() + STARTUP
        # Port readiness: the only polling loop here, bounded by STARTUP.  A subprocess gives no
        # other portable sign that uvicorn (or our WsgiServer) has started listening.
        while True:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"the server exited with {self.proc.returncode} before listening:\n{self.stderr()}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1.0).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"the server did not listen on port {self.port} within {STARTUP:.0f} s:\n{self.stderr()}"
                    )
                time.sleep(0.05)

    def stderr(self) -> str:
        """What the server wrote on stderr so far."""
        self._errfile.flush()
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        """Terminate the server (kill it if it does not end within WAIT seconds)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(WAIT)
        self._errfile.close()
        self.unwatch()


def _sdk_http_server(tmp_path_factory, name: str, *options: str):
    """The official SDK's server (tests/servers/interop_http_sdk_server.py) on a free port, or a skip."""
    import importlib.util

    for module, install in (("mcp", "mcp"), ("uvicorn", "uvicorn")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(
                f"serving the official SDK's HTTP apps needs `{install}` (pip install mcp uvicorn)"
            )
    from ports import free_port

    port = free_port()
    server = ServerProcess(
        [*SDK_HTTP_SERVER, "--port", str(port), *options],
        port,
        tmp_path_factory.mktemp(name) / "stderr",
    )
    return server


# One process each per test run (per xdist worker), started by the first test that needs it: the SDK's
# server keeps nothing between requests but each client's own session, so the tests stay independent.


@pytest.fixture(scope="session")
def sdk_streamable(tmp_path_factory):
    """The SDK server's streamable_http_app() with default settings (sessions, SSE replies): its base URL in ``.url``."""
    server = _sdk_http_server(tmp_path_factory, "sdk-streamable")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sdk_stateless(tmp_path_factory):
    """The SDK server's streamable_http_app(stateless_http=True, json_response=True)."""
    server = _sdk_http_server(tmp_path_factory, "sdk-stateless", "--stateless", "--json-response")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sdk_sse(tmp_path_factory):
    """The SDK server's legacy sse_app(): GET /sse, POST /messages/?session_id=..."""
    server = _sdk_http_server(tmp_path_factory, "sdk-sse", "--transport", "sse")
    yield server
    server.stop()


#: The fixtures of the SDK's shared servers: their tests run on one xdist worker (``--dist loadgroup``),
#: so that each server starts once for the whole run, not once per worker.
_SHARED_SERVERS = frozenset({"sdk_streamable", "sdk_stateless", "sdk_sse"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Group the tests of the SDK's shared servers on one worker (before xdist reads the groups)."""
    for item in items:
        if _SHARED_SERVERS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("sdk-servers"))
