"""An exclusive lock, between processes, on a file that is read, changed and written back whole.

Two processes each reading a file, changing it and writing it back lose one's change (the later
write holds only what it read).  :func:`exclusive_lock` makes that read-change-write one step: it
locks ``FILE.lock`` beside the file (``flock`` on POSIX, ``msvcrt.locking`` on Windows), waiting
for another holder at most a given time.  Only those who take the lock are kept out: a program
writing the file without it is not.  Users: the OAuth token file
(:class:`~mcp_ref.oauth.store.FileStore`), a desktop client's configuration (``mcp-ref install``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

#: How long a waiter waits between two tries of the lock (seconds): ``flock`` has no timeout.
LOCK_RETRY = 0.01
#: The mode of a lock file (and of a directory) created here: its owner's only.
LOCK_FILE_MODE = 0o600


def lock_path(path: Path) -> Path:
    """The lock file of ``path``: ``FILE.lock`` beside it."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def exclusive_lock(path: Path, timeout: float) -> Iterator[None]:
    """Hold the exclusive lock of ``path`` (:func:`lock_path`; created 0600 in a directory created
    0700, and left in place: removing it would let two processes lock two different files).

    Raises :class:`OSError` when the lock file cannot be opened, :class:`TimeoutError` when another
    process still holds the lock after ``timeout`` seconds (nothing was done then)."""
    lock = lock_path(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(lock, flags, LOCK_FILE_MODE)
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(descriptor):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{lock} is still locked after {timeout:g} s")
            time.sleep(LOCK_RETRY)
        try:
            yield
        finally:
            _unlock(descriptor)
    finally:
        os.close(descriptor)


def _try_lock(descriptor: int) -> bool:
    """Take the exclusive lock on the open lock file if it is free: True when taken."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(descriptor: int) -> None:
    """Let go of the lock (on POSIX closing the file would too; Windows asks for it first)."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)
        except OSError:
            pass  # not held: nothing to let go of
        return
    import fcntl

    fcntl.flock(descriptor, fcntl.LOCK_UN)
