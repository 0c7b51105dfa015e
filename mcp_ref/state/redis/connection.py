"""One Redis connection pool per process, and the key namespace.

``redis://host:port/db?namespace=NAME`` (also ``rediss://`` and ``unix://``): redis-py's own URL,
plus ``namespace`` (default ``mcp_ref``), the prefix of every key and channel this package uses,
so one Redis serves several deployments (or tests) without their keys meeting.

The pool is made on first use *in this process*: a gunicorn that imports the app before forking
(``--preload``) must not share one socket between its workers, so a process that finds the pool
made by another pid (its parent) makes its own.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

DEFAULT_NAMESPACE = "mcp_ref"
#: Seconds between two warnings of one kind about Redis (the rest are counted, and said with the next).
WARN_EVERY = 60.0
#: Connections one process's pool opens at most (then a caller waits for one, up to its timeout).
MAX_CONNECTIONS = 64
#: Seconds a command, or opening a connection, may take before it fails (Redis down: no hang).
SOCKET_TIMEOUT = 2.0


def json_text(value: Any) -> str:
    """A JSON value's text as the stores keep it (compact: equal values of a scalar give equal text)."""
    return json.dumps(value, separators=(",", ":"))


def reply_text(value: Any) -> str:
    """A Redis reply as text (redis-py answers bytes, as the client is made without decoding)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def split_url(url: str) -> tuple[str, str]:
    """``(redis-py's URL, namespace)``: the ``namespace`` query parameter taken out of ``url``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    namespace = next((value for key, value in query if key == "namespace"), DEFAULT_NAMESPACE)
    if not namespace or any(c in namespace for c in " \r\n{}"):
        raise ValueError(f"not a usable Redis key namespace: {namespace!r}")
    rest = urlencode([(key, value) for key, value in query if key != "namespace"])
    return urlunsplit(parts._replace(query=rest)), namespace


class Connection:
    """A deployment's Redis: the URL, the namespace, and this process's client (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        socket_timeout: float = SOCKET_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ):
        self.url, self.namespace = split_url(url)
        self.socket_timeout = socket_timeout
        self.max_connections = max_connections
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._client: Any = None

    def key(self, *parts: str) -> str:
        """``namespace:part:part...``: a key (or channel) of this deployment."""
        return ":".join((self.namespace, *parts))

    @property
    def client(self) -> Any:
        """This process's ``redis.Redis`` (made on first use; made anew in a forked child)."""
        pid = os.getpid()
        if self._client is None or self._pid != pid:
            with self._lock:
                if self._client is None or self._pid != pid:
                    import redis  # the redis extra: pip install "mcp-ref[redis]"

                    pool = redis.BlockingConnectionPool.from_url(
                        self.url,
                        max_connections=self.max_connections,
                        timeout=self.socket_timeout,
                        socket_timeout=self.socket_timeout,
                        socket_connect_timeout=self.socket_timeout,
                        health_check_interval=30,
                    )
                    self._client = redis.Redis(connection_pool=pool)
                    self._pid = pid
        return self._client

    def close(self) -> None:
        """Close this process's connections (a new one is made if used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and self._pid == os.getpid():
            client.close()
            client.connection_pool.disconnect()


def fresh_after_fork(fresh_process: Callable[[], None]) -> None:
    """Call ``fresh_process`` (a method: held weakly, with its object) in every forked child: the
    parent's locks, threads and token are not the child's (gunicorn ``--preload``)."""
    method_ref = weakref.WeakMethod(fresh_process)

    def after_fork_in_child() -> None:
        method = method_ref()
        if method is not None:
            method()

    os.register_at_fork(after_in_child=after_fork_in_child)


class Throttled:
    """``logger.warning`` at most once per :data:`WARN_EVERY` seconds per kind: a Redis that is down
    fails every call, and must not flood the log; the warnings held back are counted, and the next
    one says how many."""

    def __init__(self, logger: logging.Logger):
        self.logger = logger
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._held: Counter[str] = Counter()

    def warning(self, kind: str, message: str, *args: Any) -> None:
        """Log ``message % args`` now, unless a warning of ``kind`` was logged less than
        :data:`WARN_EVERY` seconds ago (then it is only counted)."""
        now = time.monotonic()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < WARN_EVERY:
                self._held[kind] += 1
                return
            self._last[kind] = now
            held = self._held.pop(kind, 0)
        self.logger.warning(message + (f" ({held} more like it not logged)" if held else ""), *args)
