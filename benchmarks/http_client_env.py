"""The HTTP client with requests' per-request environment scan (``trust_env`` on, as before issue 24)
against the environment read once (``mcp_ref.http.bounded_reads.resolve_environment``, the default),
two clients alternated in one run against ``mcp-ref serve-demo --http`` in a subprocess.

Prints each one's client CPU per call (``time.process_time``, median of the rounds) and calls/s, and
their CPU ratio.  ``python benchmarks/http_client_env.py [modern|handshake] [--calls N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time

from mcp_ref import Client


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("era", nargs="?", default="modern", choices=["modern", "handshake"])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcp_ref",
            "serve-demo",
            "--http",
            f"127.0.0.1:{port}",
            "--quiet-server",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        clients = {
            "env scan": Client.http(url, era=options.era),
            "read once": Client.http(url, era=options.era),
        }
        clients[
            "env scan"
        ].session.transport.http.trust_env = True  # requests' default: scan on every request
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
        for _ in range(options.rounds):
            for name, client in clients.items():
                cpu, wall = time.process_time(), time.perf_counter()
                for _ in range(options.calls):
                    client.call_tool("echo", {"text": "x"})
                figures[name].append(
                    (
                        (time.process_time() - cpu) / options.calls * 1e6,
                        options.calls / (time.perf_counter() - wall),
                    )
                )
        for client in clients.values():
            client.close()
    finally:
        server.terminate()
        server.wait(10)
    cpu = {name: statistics.median(c for c, _ in rounds) for name, rounds in figures.items()}
    for name, rounds in figures.items():
        print(
            f"{name:9s}  client CPU/call {cpu[name]:6.0f} µs   calls/s {statistics.median(r for _, r in rounds):6.0f}"
        )
    print(
        f"client CPU per call, env scan / read once: {cpu['env scan'] / cpu['read once']:.2f}x "
        f"({options.era} era, {options.rounds} rounds of {options.calls} calls, medians)"
    )


if __name__ == "__main__":
    main()
