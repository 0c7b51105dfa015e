"""Where an OAuth client keeps its registrations and tokens: the :class:`TokenStore` protocol.

Two kinds of record, each a JSON object under a string key:

- ``client <issuer>``: the client's registration with that authorization server (client id,
  secret, method, redirect URIs).  2026-07-28 basic/authorization/client-registration
  §Authorization Server Binding: clients "MUST associate those credentials with the specific
  authorization server that issued them, keyed by the authorization server's issuer identifier".
- ``tokens <resource>``: the tokens for one MCP server (the issuer that minted them is inside;
  tokens from another issuer are never sent).

:class:`MemoryStore` keeps them for the life of the process; :class:`FileStore` in one JSON file,
created with mode 0600 (its directory 0700) and replaced atomically, so a crash never leaves half
a file and no other user can read a token; each change is read, made and written under a lock
shared with the other processes using the file, so none loses another's record.  Both are
bounded: past :data:`MAX_RECORDS` the oldest record is dropped.

Both also delete a record only while it is still a given value, in one step
(:meth:`MemoryStore.delete_if`): the OAuth client forgets refused tokens so, and a login or refresh
saved meanwhile by another process sharing the store stays.  A store of your own with only
``load``, ``save`` and ``delete`` still works (:func:`delete_if_unchanged` reads, compares and
deletes in two steps then, which can delete such a save: give it a ``delete_if`` of its own).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from ..file_lock import exclusive_lock

#: Records a store keeps; the oldest is dropped past it.
MAX_RECORDS = 1024


class TokenStore(Protocol):
    """A key-value store of JSON objects (see the module docstring for the keys).

    Optional, and advised for a store several processes share: ``delete_if(key, expected) ->
    bool``, deleting ``key`` only while its value is still ``expected`` (compared as
    :func:`same_record` does), in one step (:meth:`MemoryStore.delete_if`).  Without it,
    :func:`delete_if_unchanged` falls back to a load and a delete, which can delete a value
    another process saved in between."""

    def load(self, key: str) -> dict[str, Any] | None: ...

    def save(self, key: str, value: dict[str, Any]) -> None: ...

    def delete(self, key: str) -> None: ...


def same_record(stored: Any, expected: Any) -> bool:
    """Whether two records are the same value, for every value (a record always equals itself):
    compared as canonical JSON (keys sorted), so a record read back from a file (a tuple saved
    comes back a list) equals the one saved.  Infinity and NaN, which JSON cannot hold (RFC 8259
    §6) but Python's reader takes from ``1e999`` and a :class:`FileStore` writes and reads back,
    are written as ``Infinity`` and ``NaN`` for the comparison; a value that is no JSON at all
    (bytes, a set, a cycle) compares with ``==``.  Were a record unequal to itself, tokens whose
    refresh is refused could never be deleted (:func:`delete_if_unchanged`), and would be sent
    for ever."""
    try:
        return _canonical(stored) == _canonical(expected)
    except (TypeError, ValueError):
        return bool(stored == expected)


def _canonical(record: Any) -> str:
    """``record`` as canonical JSON text (keys sorted, no layout; infinity and NaN as Python
    writes them, so each equals itself)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=True)


def delete_if_unchanged(store: TokenStore, key: str, expected: dict[str, Any]) -> bool:
    """Delete ``key`` from ``store`` if it still holds ``expected``: True when deleted; False when
    it holds something else (another process saved it) or nothing.

    One step with the store's own ``delete_if`` (every store here has one).  A store without it
    is read, compared and deleted in two steps: a save by another process between the two is
    deleted too (racy; documented on :class:`TokenStore`)."""
    conditional = getattr(store, "delete_if", None)
    if conditional is not None:
        return bool(conditional(key, expected))
    if not same_record(store.load(key), expected):
        return False
    store.delete(key)
    return True


def client_key(issuer: str) -> str:
    """The key of the client registration with ``issuer``."""
    return f"client {issuer}"


def tokens_key(resource: str) -> str:
    """The key of the tokens for the MCP server ``resource``."""
    return f"tokens {resource}"


class MemoryStore:
    """A :class:`TokenStore` in memory (the default): nothing outlives the process."""

    def __init__(self):
        self._lock = threading.RLock()
        self._records: dict[str, dict] = {}

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._current().get(key)
            return dict(value) if value is not None else None

    def save(self, key: str, value: dict[str, Any]) -> None:
        with self._lock, self._changing():
            records = self._current()
            records.pop(key, None)
            records[key] = dict(value)
            while len(records) > MAX_RECORDS:
                del records[next(iter(records))]
            self._changed()

    def delete(self, key: str) -> None:
        with self._lock, self._changing():
            if self._current().pop(key, None) is not None:
                self._changed()

    def delete_if(self, key: str, expected: dict[str, Any]) -> bool:
        """Delete ``key`` if its value is still ``expected`` (:func:`same_record`), read, compared
        and deleted in one step (under the lock, and in a :class:`FileStore` under the file's lock
        too, so no other process saves in between): True when deleted, False when ``key`` holds
        something else or nothing (then nothing changes)."""
        with self._lock, self._changing():
            records = self._current()
            if key not in records or not same_record(records[key], expected):
                return False
            del records[key]
            self._changed()
            return True

    def keys(self) -> list[str]:
        """Every key held."""
        with self._lock:
            return list(self._current())

    def _changing(self) -> contextlib.AbstractContextManager:
        """Held while the records are read, changed and written back (under the lock): nothing
        more in memory."""
        return contextlib.nullcontext()

    def _current(self) -> dict[str, dict]:
        """The records as they are now (under the lock)."""
        return self._records

    def _changed(self) -> None:
        """The records changed (under the lock): nothing to do in memory."""


class FileStore(MemoryStore):
    """A :class:`TokenStore` in a JSON file (mode 0600), re-read on every load so that several
    processes see each other's logins; written atomically (a temporary file, then a rename).

    A save or a delete (a :meth:`~MemoryStore.delete_if` too) reads the file, changes it and
    writes it back under the exclusive lock of
    ``FILE.lock`` beside it (:func:`~mcp_ref.file_lock.exclusive_lock`), so two processes saving
    at once both keep their record.  Waiting for another process's lock takes at most
    ``lock_timeout`` seconds, then :class:`TimeoutError` (nothing changed).  A program writing the
    file without the lock (an older mcp_ref) is not kept out."""

    def __init__(self, path: str | os.PathLike, *, lock_timeout: float = 10.0):
        super().__init__()
        self.path = Path(path)
        self.lock_timeout = lock_timeout

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        """Hold the file's lock (under the thread lock) for one read-change-write."""
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(exclusive_lock(self.path, self.lock_timeout))
            except TimeoutError:
                raise TimeoutError(
                    f"the token store {self.path} is still locked by another process after "
                    f"{self.lock_timeout:g} s; nothing changed"
                ) from None
            yield

    def _current(self) -> dict[str, dict]:
        """The records as the file holds them now (another process may have changed it)."""
        try:
            with open(self.path, encoding="utf-8") as file:
                records = json.load(file)
        except (OSError, ValueError):
            records = {}
        self._records = (
            {k: v for k, v in records.items() if isinstance(v, dict)}
            if isinstance(records, dict)
            else {}
        )
        return self._records

    def _changed(self) -> None:
        """Write the records to the file, atomically."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)  # 0600
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(self._records, file, indent=1, sort_keys=True)
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
