"""The processes of the proxy tests: the target (tests/servers/proxy_target.py) on stdio or HTTP,
and
``mcp-ref proxy`` in front of it on stdio or HTTP, each a real subprocess."""

from __future__ import annotations

import contextlib
import queue
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

from conftest import WAIT, command_label, watch_stderr

from mcp_ref import proxy_server

PYTHON = sys.executable
TARGET_SCRIPT = str(Path(__file__).resolve().parents[1] / "servers" / "proxy_target.py")


class Lines:
    """The lines a subprocess writes to one pipe, readable with a bounded wait."""

    def __init__(self, pipe):
        self.queue: queue.Queue = queue.Queue()
        self.all: list[str] = []
        threading.Thread(target=self._pump, args=(pipe,), daemon=True).start()

    def _pump(self, pipe) -> None:
        for line in iter(pipe.readline, ""):
            self.all.append(line)
            self.queue.put(line)
        self.queue.put(None)

    def wait_for(self, pattern: str, timeout: float = WAIT) -> re.Match:
        """The first line (from now) matching ``pattern``; fails after ``timeout`` or at the end."""
        while True:
            try:
                line = self.queue.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r}: {''.join(self.all)}") from None
            assert line is not None, "the process ended: " + "".join(self.all)
            found = re.search(pattern, line)
            if found:
                return found


class Spawned:
    """A subprocess that announces its URL on a line of ``announce_on`` (stdout or stderr)."""

    def __init__(self, command: list[str], pattern: str, announce_on: str):
        self.command = command
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out, self.err = Lines(self.proc.stdout), Lines(self.proc.stderr)
        watch_stderr(command_label(command), lambda: list(self.err.all))
        try:
            source = self.out if announce_on == "stdout" else self.err
            self.url = source.wait_for(pattern, timeout=3 * WAIT).group(1)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """End it (killed if it does not end in WAIT)."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(WAIT)


def target_command(era: str) -> list[str]:
    """The target on stdio, speaking ``era`` (handshake, modern or both)."""
    return [PYTHON, TARGET_SCRIPT, "--era", era]


def start_target_http(era: str) -> Spawned:
    """The target over HTTP on a free port of 127.0.0.1."""
    return Spawned([*target_command(era), "--http"], r"^URL (\S+)", "stdout")


def proxy_command(target: str, *options: str) -> list[str]:
    """``mcp-ref proxy TARGET OPTIONS`` (TARGET: a URL, or a command in one string)."""
    return [PYTHON, "-m", "mcp_ref", "--timeout", str(WAIT), "proxy", target, *options]


def start_proxy_http(target: str, *options: str) -> Spawned:
    """``mcp-ref proxy TARGET --http 127.0.0.1:0``; ``url`` is where it serves."""
    return Spawned(
        proxy_command(target, "--http", "127.0.0.1:0", *options),
        r"at (http://127\.0\.0\.1:\d+/mcp) ",
        "stderr",
    )


def as_target(command: list[str]) -> str:
    """A command as the one-string TARGET the CLI takes."""
    return shlex.join(command)


@contextlib.contextmanager
def served_proxy(target, **options):
    """A proxy (``proxy_server(target, **options)``, its back clients' timeout WAIT unless given)
    served over HTTP on 127.0.0.1 in a thread of this process; yields ``(proxy, url)``."""
    options.setdefault("client_options", {"timeout": WAIT})
    proxy = proxy_server(target, **options)
    httpd = proxy.http_server("127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy, f"{httpd.url}/mcp"
    finally:
        httpd.shutdown()
        thread.join(WAIT)
        proxy.close()
