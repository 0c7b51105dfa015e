"""Ports on 127.0.0.1 for subprocess servers that need one on their command line (gunicorn,
uvicorn, redis-server, the commands the docs show); a server in the test process listens on port 0
instead and says which port it got."""

from __future__ import annotations

import random
import socket

#: Where :func:`free_port` picks from when the kernel's ephemeral range cannot be read (Linux's default
#: range starts at 32768).
LOWEST_PORT, DEFAULT_EPHEMERAL_START = 10_000, 32_768
#: Below this many ports to choose from, two workers would pick the same one too often.
MIN_CHOICE = 4_096


def free_port() -> int:
    """A port that was free a moment ago, for a subprocess server that needs a port on its command line.

    Picked at random below the kernel's ephemeral range: a port the kernel hands out for port 0 is
    back in that range once freed, and under load the next outgoing connection (of any test) may take
    it as its local port before the server binds it, which then fails ("Address already in use") while
    a readiness check connects to whatever holds it.  Below the range only another free_port() call
    can pick it, at random."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            ephemeral_start = int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_start = DEFAULT_EPHEMERAL_START
    if ephemeral_start - LOWEST_PORT >= MIN_CHOICE:
        for _ in range(200):
            port = random.randrange(LOWEST_PORT, ephemeral_start)
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    # a machine whose ephemeral range leaves no room below it: a port the kernel hands out
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
