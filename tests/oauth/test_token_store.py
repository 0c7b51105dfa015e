"""The OAuth token store shared by processes (``mcp_ref.oauth.store.FileStore``): a save or a delete
reads the file, changes it and writes it back under the lock of ``FILE.lock``, so no process loses
another's record.  The processes are real ones; one is paused between its read and its write."""

from __future__ import annotations

import json
import sys

from conftest import WAIT, RawPeer

from mcp_ref.file_lock import exclusive_lock
from mcp_ref.oauth.store import FileStore

#: A process saving one record (argv: file, key, lock timeout) with its write held back until a line
#: comes on stdin: it says "read" once it has read the file, then "saved" (or the error) at the end.
PAUSED_SAVE = """
import json, sys
from mcp_ref.oauth.store import FileStore

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
