"""The OAuth token store shared by processes (``mcp_ref.oauth.store.FileStore``): a save or a delete
reads the file, changes it and writes it back under the lock of ``FILE.lock``, so no process loses
another's record.  The processes are real ones; one is paused between its read and its write."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import WAIT, RawPeer

from mcp_ref.file_lock import exclusive_lock
from mcp_ref.oauth.store import FileStore, MemoryStore, delete_if_unchanged, same_record

#: A process saving one record (argv: file, key, lock timeout) with its write held back until a line
#: comes on stdin: it says "read" once it has read the file, then "saved" (or the error) at the end.
PAUSED_SAVE = """
import json, sys
from mcp_ref.oauth.store import FileStore, MemoryStore, delete_if_unchanged

class Paused(FileStore):
    def _changed(self):
        print(json.dumps("read"), flush=True)
        sys.stdin.readline()
        super()._changed()

path, key, timeout, pause = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "pause"
store = (Paused if pause else FileStore)(path, lock_timeout=timeout)
try:
    store.save(key, {"access_token": "x"})
except TimeoutError as exc:
    print(json.dumps(["TimeoutError", str(exc)]), flush=True)
else:
    print(json.dumps("saved"), flush=True)
"""

#: A process deleting one record if it is still ``{"access_token": "stale"}`` (argv: file, key),
#: paused like PAUSED_SAVE once it has compared and is about to write: it says "read", waits for a
#: line, then prints what ``delete_if`` answered.
PAUSED_DELETE_IF = """
import json, sys
from mcp_ref.oauth.store import FileStore

class Paused(FileStore):
    def _changed(self):
        print(json.dumps("read"), flush=True)
        sys.stdin.readline()
        super()._changed()

print(json.dumps(Paused(sys.argv[1]).delete_if(sys.argv[2], {"access_token": "stale"})), flush=True)
"""


def saving(path, key: str, *, lock_timeout: float = WAIT, pause: bool = False) -> RawPeer:
    """A process saving ``key`` in the FileStore at ``path``."""
    command = [sys.executable, "-c", PAUSED_SAVE, str(path), key, str(lock_timeout)]
    return RawPeer(command + ["pause" if pause else "go"])


def test_a_save_while_another_process_saves_loses_neither_record(tmp_path):
    """Process A has read the file and is about to write it back; process B saves meanwhile.  B
    must not write into A's read-change-write (A's write, made from what it read, would drop B's
    record): B waits for the lock, here with no time to wait, so it says the store is locked and
    saves nothing.  Once A is done, B's save goes through, and the file holds both records."""
    path = tmp_path / "tokens.json"
    first = saving(path, "tokens A", pause=True)
    try:
        assert first.recv() == "read"
        second = saving(path, "tokens B", lock_timeout=0)
        try:
            outcome = second.recv()
        finally:
            assert second.close() == 0
        first.send(b"go\n")
        assert first.recv() == "saved"
    finally:
        assert first.close() == 0
    records = json.loads(path.read_text())
    if outcome == "saved":  # a save that says it is done is in the file
        assert "tokens B" in records
    assert outcome[0] == "TimeoutError" and "still locked by another process" in outcome[1]
    third = saving(path, "tokens B")
    try:
        assert third.recv() == "saved"
    finally:
        assert third.close() == 0
    assert sorted(json.loads(path.read_text())) == ["tokens A", "tokens B"]


def test_a_held_lock_times_out_with_a_clear_error_and_changes_nothing(tmp_path):
    """A process that keeps the lock (a stuck one) costs a waiter at most ``lock_timeout``: then
    TimeoutError naming the store, and the file is as it was."""
    path = tmp_path / "tokens.json"
    store = FileStore(path, lock_timeout=0)
    store.save("tokens A", {"access_token": "x"})
    with exclusive_lock(path, WAIT):
        for change in (lambda: store.save("tokens B", {}), lambda: store.delete("tokens A")):
            try:
                change()
            except TimeoutError as exc:
                assert str(path) in str(exc) and "nothing changed" in str(exc)
            else:
                raise AssertionError("a change went through while another process held the lock")
    assert sorted(json.loads(path.read_text())) == ["tokens A"]
    assert store.load("tokens A") == {"access_token": "x"}  # reading needs no lock


def test_a_conditional_delete_is_one_step_no_other_process_saves_inside_it(tmp_path):
    """``delete_if`` compares and deletes under the file's lock: a process saving while another is
    between its comparison and its write waits for the lock (here with no time to wait: it says
    the store is locked), so it never saves a fresh record that the delete then drops."""
    path = tmp_path / "tokens.json"
    FileStore(path).save("tokens A", {"access_token": "stale"})
    deleting = RawPeer([sys.executable, "-c", PAUSED_DELETE_IF, str(path), "tokens A"])
    try:
        assert deleting.recv() == "read"
        second = saving(path, "tokens A", lock_timeout=0)
        try:
            outcome = second.recv()
        finally:
            assert second.close() == 0
        deleting.send(b"go\n")
        assert deleting.recv() is True
    finally:
        assert deleting.close() == 0
    assert outcome[0] == "TimeoutError"
    assert json.loads(path.read_text()) == {}


@pytest.mark.parametrize("kind", ["file", "memory", "load, save and delete only"])
def test_a_conditional_delete_keeps_a_record_saved_since(tmp_path, kind):
    """Two stores on one file (two processes), or one store: the record read earlier (stale) is
    deleted only while it is still there; once another save replaced it, the new record stays.
    Records compare as JSON (keys sorted; a tuple saved is the list read back).  A store of one's
    own without ``delete_if`` gets the same answers from ``delete_if_unchanged`` (in two steps)."""

    class OwnStore:
        def __init__(self):
            self.records = {}

        def load(self, key):
            return self.records.get(key)

        def save(self, key, value):
            self.records[key] = dict(value)

        def delete(self, key):
            self.records.pop(key, None)

    if kind == "file":
        mine, other = FileStore(tmp_path / "tokens.json"), FileStore(tmp_path / "tokens.json")
    else:
        mine = other = MemoryStore() if kind == "memory" else OwnStore()
    stale = {"access_token": "stale", "scope": ("a", "b"), "expires_at": 1.5}
    fresh = {"access_token": "fresh", "expires_at": 2.5}
    mine.save("tokens A", stale)
    other.save("tokens A", fresh)
    assert delete_if_unchanged(mine, "tokens A", stale) is False
    assert other.load("tokens A") == fresh
    assert delete_if_unchanged(mine, "tokens A", {"expires_at": 2.5, "access_token": "fresh"})
    assert mine.load("tokens A") is None and other.load("tokens A") is None
    other.save("tokens A", stale)
    assert delete_if_unchanged(mine, "tokens A", {**stale, "scope": ["a", "b"]}) is True
    assert delete_if_unchanged(mine, "tokens A", stale) is False  # nothing left to delete


@pytest.mark.parametrize("kind", ["file", "memory"])
@pytest.mark.parametrize(
    "odd",
    [float("inf"), float("-inf"), float("nan"), b"bytes", {"a", "set"}],
    ids=["infinity", "minus infinity", "NaN", "bytes", "a set"],
)
def test_a_record_is_always_the_same_as_itself(tmp_path, kind, odd):
    """``same_record`` is total: a record holding what JSON cannot (infinity, NaN: a token answer's
    ``"expires_in": 1e999`` reads as infinity; RFC 8259 §6) or what is no JSON at all equals
    itself, read back or not, so the conditional delete of refused tokens deletes them (they were
    never deleted, and were sent for ever) and a record that differs is still kept."""
    record = {"access_token": "refused", "expires_at": odd}
    assert same_record(record, dict(record))
    assert not same_record(record, {**record, "access_token": "other"})
    if isinstance(odd, float):  # what a store can hold (a FileStore writes JSON)
        store = FileStore(tmp_path / "tokens.json") if kind == "file" else MemoryStore()
        store.save("tokens A", record)
        assert same_record(store.load("tokens A"), record)
        assert delete_if_unchanged(store, "tokens A", {**record, "access_token": "other"}) is False
        assert delete_if_unchanged(store, "tokens A", record) is True
        assert store.load("tokens A") is None
