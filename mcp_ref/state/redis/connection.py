"""One Redis connection pool per process, and the key namespace.

``redis://host:port/db?namespace=NAME`` (also ``rediss://`` and ``unix://``): redis-py's own URL,
plus ``namespace`` (default ``mcp_ref``), the prefix of every key and channel this package uses,
so one Redis serves several deployments (or tests) without their keys meeting.

The pool is made on first use *in this process*: a gunicorn that imports the app before forking
(``--preload``) must not share one socket between its workers, so a process that finds the pool
made by another pid (its parent) makes its own.

Eviction: every key of this package must stay until it expires or is deleted; a Redis that evicts
keys at its ``maxmemory`` (any ``maxmemory-policy`` but ``noeviction``, Redis's default) may drop
a session table's or a task index's key, and sessions and tasks vanish without a word.  So the
first client of a process asks Redis its policy (:func:`eviction_policy`) and logs one WARNING when
it evicts (:meth:`Connection.warn_if_evicting`); it does not refuse to start: a library does not
overrule its operator, and a Redis with no ``maxmemory`` evicts nothing (docs/deploying.md).
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
#: The one ``maxmemory-policy`` under which Redis never drops a key of ours (it refuses writes
#: instead: ``stores.FAULTS``).
NO_EVICTION = "noeviction"

log = logging.getLogger(__name__)


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
    rebuilt = urlunsplit(parts._replace(query=rest))
    if not parts.netloc and url.startswith(f"{parts.scheme}://"):
        # unix:///path: urlunsplit drops the empty authority's "//", which redis-py requires
        rebuilt = f"{parts.scheme}://{rebuilt[len(parts.scheme) + 1 :]}"
    return rebuilt, namespace


def without_userinfo(url: str) -> str:
    """``url`` with whatever precedes its host's ``@`` (a user name and password, even one with an
    unencoded ``/`` or ``#``) replaced by ``***``: what a message may name."""
    scheme, sep, rest = url.partition("://")
    if "@" not in rest:
        return url
    return f"{scheme}{sep}***@{rest.rpartition('@')[2]}"


def check_url(url: str) -> None:
    """ValueError now, naming the URL without its user name and password, when redis-py cannot read
    ``url`` (it would fail only at the first command, in the middle of a request: the peer got no
    answer and the log a message starting with the password).  Nothing of redis-py's error is kept,
    not even as the exception's context: its message may quote the password (a ``/`` unencoded
    there ends the host, and the password's start is read as the port)."""
    from redis.connection import parse_url  # the redis extra: pip install "mcp-ref[redis]"

    parts = urlsplit(url)
    # an "@" past the host (in the path, query or fragment) is a password's, cut short by an
    # unencoded "/", "?" or "#": redis-py may read it without an error, and the wrong host
    if "@" not in parts.path + parts.query + parts.fragment:
        try:
            parse_url(url)
            return
        except ValueError:
            pass  # raised below, outside this handler: no context to carry the original
    raise ValueError(
        f"not a usable Redis URL: {without_userinfo(url)!r} (redis://[[user]:password@]host:port/db; "
        "percent-encode every '/', '#', '?', '@' and ':' of the user name and password: "
        "urllib.parse.quote(password, safe=''))"
    )


class Connection:
    """A deployment's Redis: the URL, the namespace, and this process's client (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        socket_timeout: float = SOCKET_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ):
        check_url(url)  # as given (split_url rewrites it): a bad one fails the start, not a request
        self.url, self.namespace = split_url(url)
        self.socket_timeout = socket_timeout
        self.max_connections = max_connections
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._client: Any = None
        #: When (time.monotonic) to read Redis's eviction policy; None: read (here or before a fork).
        self._policy_due: float | None = 0.0

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
        client = self._client
        if self._policy_due is not None:
            self.warn_if_evicting(client)
        return client

    def warn_if_evicting(self, client: Any) -> None:
        """Read Redis's ``maxmemory-policy`` (once: the first caller does), and log a WARNING when it
        is not ``noeviction`` (see the module docstring).  Redis unreachable: read again by a
        caller at least :data:`WARN_EVERY` seconds later (a Redis that is down is not asked twice
        per call meanwhile)."""
        with self._lock:
            if self._policy_due is None or time.monotonic() < self._policy_due:
                return
            self._policy_due = None
        policy = eviction_policy(client)
        if policy is None:
            with self._lock:
                self._policy_due = time.monotonic() + WARN_EVERY
        elif not policy:
            log.warning(
                "could not read Redis's maxmemory-policy (CONFIG and INFO refused): mcp_ref's "
                "Redis must run with maxmemory-policy noeviction (or no maxmemory), or sessions "
                "and tasks can be silently lost"
            )
        elif policy != NO_EVICTION:
            log.warning(
                "Redis runs with maxmemory-policy %s: at its maxmemory it evicts keys, and this "
                "server's sessions and tasks can be silently lost (404 'Session not found'); run "
                "mcp_ref's Redis with maxmemory-policy noeviction",
                policy,
            )

    def close(self) -> None:
        """Close this process's connections (a new one is made if used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and self._pid == os.getpid():
            client.close()
            client.connection_pool.disconnect()


def eviction_policy(client: Any) -> str | None:
    """Redis's ``maxmemory-policy``: from ``CONFIG GET``, else (``CONFIG`` refused or renamed, as
    managed Redis often does) from ``INFO memory``; ``""`` when neither says, None when Redis cannot
    be reached."""
    import redis

    try:
        try:
            config = client.config_get("maxmemory-policy")
            return reply_text(config.get("maxmemory-policy") or config.get(b"maxmemory-policy", ""))
        except redis.exceptions.ResponseError:  # CONFIG refused (NOPERM) or unknown (renamed)
            memory = client.info("memory")
            return reply_text(memory.get("maxmemory_policy", ""))
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return None
    except redis.exceptions.ResponseError:
        return ""


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
