"""The card's threads over stdio, with a real subprocess server: during ``tools/call`` each side has
exactly one thread reading the connection, the same thread for the whole connection, and the
handlers run elsewhere (issue 33, item 2).

The client side is watched in this process (the subprocess transport's ``read()`` records who
calls it); the server side by the server itself (tests/servers/stdio_threads.py reports the
threads that called its transport's ``read()``).
"""

import sys
import threading

import pytest
from conftest import SERVERS, WAIT

from mcp_ref import Client
from mcp_ref.stdio import SubprocessTransport

CALLS = 5


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_each_side_has_one_reader_thread_for_the_whole_connection(era, monkeypatch):
    client_readers: set[int] = set()
    plain_read = SubprocessTransport.read

    def recorded_read(self):
        client_readers.add(threading.get_ident())
        return plain_read(self)

    monkeypatch.setattr(SubprocessTransport, "read", recorded_read)
    command = [sys.executable, str(SERVERS / "stdio_threads.py")]
    with Client.stdio(command, era=era, timeout=WAIT) as client:
        reports = [client.call_tool("reader_threads").structured_content for _ in range(CALLS)]
        reader = client.connection.session._reader
        # one thread read every answer, the session's reader; the caller only waited on its future
        assert client_readers == {reader.ident}
        assert threading.get_ident() not in client_readers
    assert client_readers == {reader.ident}
    first = reports[0]["readers"]
    assert len(first) == 1  # the server: one reader thread ...
    assert all(report["readers"] == first for report in reports)  # ... the same for every call
    assert all(report["most_inside"] == 1 for report in reports)
    assert all(report["handler"] not in first for report in reports)  # handlers run on the pool
