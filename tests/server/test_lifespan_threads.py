"""Handlers run on other threads than the lifespan (issue 34 item 3), tested with sqlite3: what a
``sqlite3.connect()`` in the lifespan does (every tool fails; the client sees a generic error, the
server's log says why and what to do), and ``mcp_ref.PerThread``, one object per handler thread, in
memory, over stdio (a real subprocess) and over HTTP (a real socket).  Then PerThread on its own.
Issue 34 item 2's scenario, two pytest tests each with a fresh database in the lifespan, runs here
as a child pytest.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import sqlite3
import subprocess
import sys
import threading

import pytest
from conftest import WAIT, run_threads

from mcp_ref import Client, McpError, PerThread, Server
from mcp_ref.server import Context

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def bookmarks_server(path: str, *, per_thread: bool = True) -> Server:
    """A server whose lifespan creates the bookmarks table in a fresh database at ``path``, and
    holds its connections: one per handler thread (PerThread), or (the mistake) one made here."""

    @contextlib.contextmanager
    def lifespan(server):
        with sqlite3.connect(path) as setup:
            setup.execute("CREATE TABLE bookmarks (url TEXT PRIMARY KEY)")
        setup.close()
        if not per_thread:
            db = sqlite3.connect(path)  # made on this thread, used on the handlers': refused
            yield db
            db.close()
            return
        with PerThread(lambda: sqlite3.connect(path)) as connections:
            yield connections

    server = Server("bookmarks", lifespan=lifespan)

    def db(ctx: Context) -> sqlite3.Connection:
        held = ctx.lifespan_context
        return held.get() if isinstance(held, PerThread) else held

    @server.tool()
    def import_bookmarks(urls: list[str], ctx: Context) -> int:
        """Add bookmarks; how many there are."""
        conn = db(ctx)
        with conn:
            conn.executemany("INSERT OR IGNORE INTO bookmarks VALUES (?)", [(u,) for u in urls])
        return conn.execute("SELECT count(*) FROM bookmarks").fetchone()[0]

    @server.resource("bookmarks://count")
    def count(ctx: Context) -> str:
        """How many bookmarks there are."""
        return str(db(ctx).execute("SELECT count(*) FROM bookmarks").fetchone()[0])

    return server


# -- sqlite3 made in the lifespan: what fails, and what the server's log says --------------------------


def test_a_sqlite_connection_made_in_the_lifespan_fails_in_tools_and_the_log_says_why(
    tmp_path, caplog
):
    server = bookmarks_server(str(tmp_path / "b.db"), per_thread=False)
    caplog.set_level(logging.ERROR, logger="mcp_ref")
    with Client.in_memory(server, timeout=WAIT) as client:
        result = client.call_tool("import_bookmarks", {"urls": ["https://a.example"]})
        assert result.is_error
        # the client is told no more than before: no sqlite3, no thread ids
        assert result.content[0].text == "Tool import_bookmarks failed with an internal error"
        with pytest.raises(McpError) as failed:
            client.read_resource("bookmarks://count")
        assert failed.value.code == -32603 and "sqlite" not in str(failed.value).lower()
    logged = [r for r in caplog.records if r.exc_info]
    assert [r.getMessage().split(":")[0] for r in logged] == [
        "tool import_bookmarks failed",
        "bookmarks-memory",  # the session's line for a resource handler
    ]
    for record in logged:
        message = record.getMessage()
        assert "a sqlite3 connection made on another thread (in the lifespan?)" in message
        assert "mcp_ref.PerThread" in message and "check_same_thread=False" in message
        # the line that logged it, not ours
        assert record.filename in ("tool_errors.py", "session.py")
    assert "handler for resources/read failed: a sqlite3 connection" in logged[1].getMessage()


def test_another_failure_is_logged_as_before(caplog):
    server = Server("plain")

    @server.tool()
    def broken() -> str:
        """Fails."""
        raise sqlite3.ProgrammingError("Cannot operate on a closed database.")

    caplog.set_level(logging.ERROR, logger="mcp_ref")
    with Client.in_memory(server, timeout=WAIT) as client:
        assert client.call_tool("broken").is_error
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.getMessage() == "tool broken failed"


WRONG_SERVER = '''
import contextlib, sqlite3, sys
from mcp_ref import Server
from mcp_ref.server import Context

@contextlib.contextmanager
def lifespan(server):
    db = sqlite3.connect(sys.argv[1])  # made on the thread that enters the lifespan
    yield db
    db.close()

server = Server("bookmarks", lifespan=lifespan)

@server.tool()
def import_bookmarks(urls: list[str], ctx: Context) -> int:
    """Add bookmarks; how many there are."""
    return ctx.lifespan_context.execute("SELECT 1").fetchone()[0]

server.run()
'''


@pytest.mark.slow
def test_over_stdio_the_servers_stderr_says_why_the_tool_failed(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(WRONG_SERVER)
    lines: list = []
    with Client.stdio(
        [sys.executable, str(script), str(tmp_path / "b.db")], stderr=lines.append, timeout=WAIT
    ) as client:
        result = client.call_tool("import_bookmarks", {"urls": []})
        assert result.is_error
        assert result.content[0].text == "Tool import_bookmarks failed with an internal error"
    # Python's default logging (no configuration): the line, then the traceback
    assert lines[0].startswith(
        "tool import_bookmarks failed: a sqlite3 connection made on another thread"
    ), lines
    assert "mcp_ref.PerThread" in lines[0]
    assert any("can only be used in that same thread" in line for line in lines)


# -- PerThread: one connection per handler thread ------------------------------------------------------


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_per_thread_connections_serve_every_tool_in_memory(tmp_path, era):
    server = bookmarks_server(str(tmp_path / "b.db"))
    with Client.in_memory(server, timeout=WAIT, era=era) as client:

        def add(n: int) -> None:
            for i in range(5):
                client.call_tool("import_bookmarks", {"urls": [f"https://{n}-{i}.example"]})

        run_threads(add, 4)  # several handler threads at once, each with its own connection
        assert client.read_resource("bookmarks://count").contents[0].text == "20"
        assert client.call_tool("import_bookmarks", {"urls": []}).structured_content == {
            "result": 20
        }
    assert server.lifespan_context is None


SQLITE_SERVER = '''
import contextlib, sqlite3, sys
from mcp_ref import PerThread, Server
from mcp_ref.server import Context

PATH = sys.argv[1]

@contextlib.contextmanager
def lifespan(server):
    with sqlite3.connect(PATH) as setup:
        setup.execute("CREATE TABLE IF NOT EXISTS bookmarks (url TEXT PRIMARY KEY)")
    setup.close()
    with PerThread(lambda: sqlite3.connect(PATH)) as connections:
        yield connections
    print("lifespan: exit", file=sys.stderr, flush=True)

server = Server("bookmarks", lifespan=lifespan)

@server.tool()
def import_bookmarks(urls: list[str], ctx: Context) -> int:
    """Add bookmarks; how many there are."""
    db = ctx.lifespan_context.get()
    with db:
        db.executemany("INSERT OR IGNORE INTO bookmarks VALUES (?)", [(u,) for u in urls])
    return db.execute("SELECT count(*) FROM bookmarks").fetchone()[0]

@server.tool()
async def count(ctx: Context) -> int:
    """How many bookmarks there are (an async tool: its loop runs on a handler thread too)."""
    return ctx.lifespan_context.get().execute("SELECT count(*) FROM bookmarks").fetchone()[0]

if __name__ == "__main__":
    if sys.argv[2:] == ["http"]:
        server.run_http("127.0.0.1", 0, on_ready=lambda httpd: print(httpd.url, flush=True))
    else:
        server.run()
'''


@pytest.mark.slow
def test_per_thread_connections_over_stdio(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(SQLITE_SERVER)
    lines: queue.Queue = queue.Queue()
    with Client.stdio(
        [sys.executable, str(script), str(tmp_path / "b.db")], stderr=lines.put, timeout=WAIT
    ) as client:
        for n in range(3):
            result = client.call_tool("import_bookmarks", {"urls": [f"https://{n}.example"]})
            assert result.structured_content == {"result": n + 1}, result
        assert client.call_tool("count").structured_content == {"result": 3}
    assert lines.get(timeout=WAIT) == "lifespan: exit"  # and no error before it


@pytest.mark.slow
def test_per_thread_connections_over_http(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(SQLITE_SERVER)
    process = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "b.db"), "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), process.stderr.read()

        def add(n: int) -> None:
            with Client.http(f"{url}/mcp", timeout=WAIT) as client:
                for i in range(3):
                    client.call_tool("import_bookmarks", {"urls": [f"https://{n}-{i}.example"]})

        run_threads(add, 3)
        with Client.http(f"{url}/mcp", timeout=WAIT, era="handshake") as client:
            assert client.call_tool("count").structured_content == {"result": 9}
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=WAIT)
    assert "Traceback" not in stderr, stderr


# -- issue 34 item 2's scenario: two tests, each a fresh database in the lifespan ---------------------

SCENARIO_SERVER = '''
import contextlib, os, sqlite3
from mcp_ref import PerThread, Server
from mcp_ref.server import Context

@contextlib.contextmanager
def lifespan(server):
    path = os.environ["BOOKMARKS_DB"]  # each test's own temporary database
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE bookmarks (url TEXT PRIMARY KEY, title TEXT)")
    setup.close()
    with PerThread(lambda: sqlite3.connect(path)) as connections:
        yield connections

server = Server("bookmarks", lifespan=lifespan)

@server.tool()
def import_bookmarks(urls: list[str], ctx: Context) -> int:
    """Add bookmarks; how many there are."""
    db = ctx.lifespan_context.get()
    with db:
        db.executemany("INSERT INTO bookmarks VALUES (?, ?)", [(u, u) for u in urls])
    return db.execute("SELECT count(*) FROM bookmarks").fetchone()[0]
'''

SCENARIO_TESTS = """
import sqlite3
import pytest
from mcp_ref import Client
from bookmarks import server

@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOKMARKS_DB", str(tmp_path / "bookmarks.db"))
    with Client.in_memory(server) as client:
        yield client

def check(client, tmp_path):
    result = client.call_tool("import_bookmarks", {"urls": ["https://a.example", "https://b.example"]})
    assert not result.is_error, result.content[0].text
    assert result.structured_content == {"result": 2}
    stored = sqlite3.connect(tmp_path / "bookmarks.db").execute("SELECT url FROM bookmarks").fetchall()
    assert len(stored) == 2

def test_first(client, tmp_path):
    check(client, tmp_path)

def test_second(client, tmp_path):
    check(client, tmp_path)
"""


@pytest.mark.slow
def test_two_tests_each_get_a_freshly_entered_lifespan_with_their_own_database(tmp_path):
    (tmp_path / "bookmarks.py").write_text(SCENARIO_SERVER)
    (tmp_path / "test_bookmarks.py").write_text(SCENARIO_TESTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, str(tmp_path)]))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
        + ["-n", "0", str(tmp_path / "test_bookmarks.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=6 * WAIT,
    )
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout + run.stderr


# -- PerThread on its own ------------------------------------------------------------------------------


class Resource:
    """An object that records the thread that made it and the one that closes it."""

    def __init__(self, log: list):
        self.made_on = threading.get_ident()
        self.log = log

    def close(self) -> None:
        self.log.append(("closed", self.made_on == threading.get_ident()))


def test_each_thread_gets_its_own_object_made_on_first_use():
    closed: list = []
    made: list = []

    def factory() -> Resource:
        made.append(threading.get_ident())
        return Resource(closed)

    with PerThread(factory) as per_thread:
        here = per_thread.get()
        assert per_thread.get() is here and made == [threading.get_ident()]
        others = run_threads(lambda n: per_thread.get(), 3)
        assert len({id(o) for o in [here, *others]}) == 4
        assert len(per_thread) <= 4
    assert closed.count(("closed", True)) >= 1  # this thread's, closed here


def test_an_object_is_closed_on_its_own_thread_when_that_thread_ends():
    closed: list = []
    per_thread: PerThread[Resource] = PerThread(lambda: Resource(closed))
    thread = threading.Thread(target=per_thread.get)
    thread.start()
    thread.join(WAIT)
    assert closed == [("closed", True)] and len(per_thread) == 0  # held no longer
    per_thread.close()
    assert closed == [("closed", True)]  # not twice


def test_it_holds_at_most_one_object_per_live_thread():
    from concurrent.futures import ThreadPoolExecutor

    closed: list = []
    with PerThread(lambda: Resource(closed)) as per_thread:
        for _ in range(5):  # pools that come and go, as connections do
            with ThreadPoolExecutor(3) as pool:
                list(pool.map(lambda _: per_thread.get(), range(12)))
                assert len(per_thread) <= 3
        assert len(per_thread) == 0  # every pool's threads ended: their objects were released
    assert closed and all(on_own_thread for _, on_own_thread in closed)


def test_sqlite_connections_of_other_threads_are_dropped_at_close_and_said_so(caplog):
    caplog.set_level(logging.DEBUG, logger="mcp_ref.per_thread")
    release = threading.Event()
    made = threading.Event()
    holder: list = []

    def keep_thread_alive() -> None:
        holder.append(per_thread.get())
        made.set()
        release.wait(WAIT)

    per_thread = PerThread(lambda: sqlite3.connect(":memory:"))
    with per_thread:
        mine = per_thread.get()
        thread = threading.Thread(target=keep_thread_alive)
        thread.start()
        assert made.wait(WAIT)
    release.set()
    thread.join(WAIT)
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        mine.execute("SELECT 1")  # this thread's: closed
    assert "cannot be closed from thread" in caplog.text and "dropped" in caplog.text
    with pytest.raises(RuntimeError, match="closed"):
        per_thread.get()


def test_a_close_that_fails_on_its_own_thread_is_raised_after_the_others_are_closed():
    closed: list = []

    def close(value: str) -> None:
        closed.append(value)
        if value == "here":
            raise OSError("flush failed")

    names = iter(["here", "there"])
    per_thread = PerThread(lambda: next(names), close=close)
    per_thread.get()
    stay, done = threading.Event(), threading.Event()

    def other() -> None:
        per_thread.get()
        done.set()
        stay.wait(WAIT)

    thread = threading.Thread(target=other)
    thread.start()
    assert done.wait(WAIT)
    with pytest.raises(OSError, match="flush failed"):
        per_thread.close()
    stay.set()
    thread.join(WAIT)
    assert sorted(closed) == ["here", "there"]


def test_a_factory_that_fails_raises_and_the_next_get_tries_again():
    calls: list = []

    def factory() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("database locked")
        return "ok"

    with PerThread(factory) as per_thread:
        with pytest.raises(OSError, match="locked"):
            per_thread.get()
        assert per_thread.get() == "ok" and len(per_thread) == 1


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="callable factory"):
        PerThread("sqlite3.connect")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="close must be callable"):
        PerThread(list, close="close")  # type: ignore[arg-type]


def test_objects_without_close_are_simply_let_go():
    with PerThread(dict) as per_thread:
        per_thread.get()["x"] = 1
        assert per_thread.get() == {"x": 1}


AT_EXIT = """
import sqlite3, threading
from mcp_ref import PerThread

per_thread = PerThread(lambda: sqlite3.connect(":memory:"))
made = threading.Event()

def hold():
    per_thread.get()
    made.set()
    threading.Event().wait()  # a daemon thread that never ends: the interpreter exits under it

threading.Thread(target=hold, daemon=True).start()
assert made.wait(10)
print("exiting", flush=True)
"""


@pytest.mark.slow
def test_an_interpreter_that_exits_without_close_does_not_close_from_the_wrong_thread(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text(AT_EXIT)
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=6 * WAIT
    )
    assert run.returncode == 0 and run.stdout == "exiting\n"
    assert run.stderr == ""  # no "SQLite objects created in a thread ..." at exit


def test_the_hint_finds_the_sqlite_error_a_handler_raised_from_and_nothing_else():
    from mcp_ref.handler_failures import thread_hint

    def used_on_another_thread() -> BaseException:
        connection: list = []
        thread = threading.Thread(target=lambda: connection.append(sqlite3.connect(":memory:")))
        thread.start()
        thread.join(WAIT)
        try:
            connection[0].execute("SELECT 1")
        except sqlite3.ProgrammingError as exc:
            return exc
        raise AssertionError("sqlite3 used the connection on another thread")

    cause = used_on_another_thread()
    assert "PerThread" in thread_hint(cause)
    wrapped = RuntimeError("the bookmarks could not be read")
    wrapped.__cause__ = cause
    assert "PerThread" in thread_hint(wrapped)
    looped = ValueError("raised from itself")
    looped.__context__ = looped
    assert thread_hint(looped) == ""
    assert thread_hint(sqlite3.ProgrammingError("Cannot operate on a closed database.")) == ""
