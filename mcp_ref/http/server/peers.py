"""A gone client noticed from its socket, under a WSGI server that does not say (gunicorn).

mcp_ref's own server tells the app that a client closed its connection
(``environ["mcp_ref.on_disconnect"]``).  gunicorn does not: an open stream learnt of it only at its
next keep-alive write, up to ``keepalive`` seconds later (two writes, to be sure: the first one to
a closed peer still succeeds), and meanwhile the stream held one of the worker's few threads.  A
client that dropped 8 streams under ``--threads 8`` left a Django site unanswered for 9 s.

gunicorn puts the client's socket in the environ (``gunicorn.socket``).  :func:`provide` gives such
a request the same ``mcp_ref.on_disconnect`` hook, served by one :class:`PeerWatcher` thread per
process that polls the watched sockets (at most every :data:`POLL_INTERVAL` seconds) for the peer's
close: end of file, a reset, or a hang-up.  It never reads what the client sent: a socket with
bytes waiting (a pipelined request) is only peeked at, then left alone (its response ends as
before, at a write).  Watching ends with the response (:func:`until_closed`), before the WSGI
server reuses the connection.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .replies import held

log = logging.getLogger(__name__)

#: Seconds between two looks at the watched sockets: how soon a gone client is noticed.
POLL_INTERVAL = 0.2
#: The environ keys of a WSGI server that hold the client's socket.
SOCKET_KEYS = ("gunicorn.socket",)

#: What ``poll`` reports of a socket whose peer has gone (none of it where there is no ``poll``:
#: then nothing is watched, see :func:`provide`).
_GONE = 0
for _name in ("POLLHUP", "POLLERR", "POLLNVAL", "POLLRDHUP"):  # POLLRDHUP: Linux only
    _GONE |= getattr(select, _name, 0)


#: A watched socket and the callbacks to call once when its peer has gone.
Watch = tuple[socket.socket, list[Callable[[], None]]]


class PeerWatcher:
    """One thread that polls sockets for their peer's close, and calls each one's callbacks once."""

    _thread: threading.Thread | None = None

    def __init__(self) -> None:
        self.pid = os.getpid()  # a forked worker starts a watcher of its own
        self._watched: dict[int, Watch] = {}
        self._cond = threading.Condition()

    def watch(self, sock: socket.socket, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once when ``sock``'s peer has closed it (until :meth:`forget`)."""
        with self._cond:
            entry = self._watched.setdefault(id(sock), (sock, []))
            entry[1].append(callback)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mcp_ref-peer-watcher", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def forget(self, sock: socket.socket) -> None:
        """Stop watching ``sock`` (its response has ended)."""
        with self._cond:
            self._watched.pop(id(sock), None)

    def watching(self) -> int:
        """How many sockets are watched."""
        with self._cond:
            return len(self._watched)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._watched:
                    self._cond.wait()
                entries = list(self._watched.items())
            try:
                gone = self._look(entries)
            except Exception:  # never stop watching: the next look may fare better
                log.exception("watching the sockets of open responses failed")
                with self._cond:
                    self._cond.wait(POLL_INTERVAL)
                continue
            for key, looked_at in gone:
                with self._cond:
                    # only the watch that was looked at: a response that ended meanwhile may have
                    # left its socket (or its id) to the next request's watch
                    entry = self._watched.get(key)
                    if entry is not looked_at:
                        continue
                    del self._watched[key]
                for callback in entry[1]:
                    try:
                        callback()
                    except Exception:  # one response's hook failing must not stop the watching
                        log.exception("ending a response whose client has gone failed")

    def _look(self, entries: Iterable[tuple[int, Watch]]) -> list[tuple[int, Watch]]:
        """Poll once (up to POLL_INTERVAL): the watches (key and entry) whose peer has gone."""
        poller = select.poll()
        by_fd: dict[int, tuple[int, Watch]] = {}
        for key, entry in entries:
            fd = entry[0].fileno()
            if fd < 0:  # closed already: its response is ending
                continue
            by_fd[fd] = (key, entry)
            poller.register(fd, select.POLLIN | _GONE)
        gone = []
        for fd, events in poller.poll(POLL_INTERVAL * 1000):
            key, entry = by_fd[fd]
            if not self._still_watched(key, entry):  # its response ended while we looked
                continue
            if events & _GONE or self._at_end(key, entry):
                gone.append((key, entry))
        return gone

    def _still_watched(self, key: int, entry: Watch) -> bool:
        with self._cond:
            return self._watched.get(key) is entry

    def _at_end(self, key: int, entry: Watch) -> bool:
        """Readable: at the end of its input (the peer closed), or not; a socket with bytes waiting
        is no longer watched (what they are is the WSGI server's business)."""
        sock = entry[0]
        try:
            # no peeking under TLS: the bytes may be a close_notify
            if isinstance(sock, ssl.SSLSocket):
                data = b"?"
            else:
                data = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # reset by the peer
            return True
        if data:
            with self._cond:
                if self._watched.get(key) is entry:
                    del self._watched[key]
        return not data


_watcher: PeerWatcher | None = None
_watcher_lock = threading.Lock()


def watcher() -> PeerWatcher:
    """This process's :class:`PeerWatcher` (a new one after a fork)."""
    global _watcher
    with _watcher_lock:
        if _watcher is None or _watcher.pid != os.getpid():
            _watcher = PeerWatcher()
        return _watcher


def provide(environ: dict) -> Any:
    """Give ``environ`` an ``mcp_ref.on_disconnect`` hook served from the client's socket, when the
    WSGI server gave the socket but no hook; returns the socket (None: nothing provided), to be
    passed to :func:`until_closed` with the response."""
    if "mcp_ref.on_disconnect" in environ or not hasattr(select, "poll"):
        return None
    sock = next(
        (environ[key] for key in SOCKET_KEYS if isinstance(environ.get(key), socket.socket)), None
    )
    if sock is None:
        return None
    environ["mcp_ref.on_disconnect"] = lambda callback: watcher().watch(sock, callback)
    return sock


def until_closed(body: Iterable[bytes], sock: Any) -> Iterable[bytes]:
    """``body``, or (``sock``: :func:`provide` gave a hook) the same body, whose closing stops the
    watching of ``sock``."""
    if sock is None:
        return body
    # PEP 3333: the WSGI server always calls ``close()``, even when its client went away
    return held(body, lambda: watcher().forget(sock))
