"""docs/first-server.md: its examples, run as pasted over real transports."""

import sys

import pytest
from conftest import ROOT, WAIT
from doc_blocks import block, run_python

PAGE = ROOT / "docs" / "first-server.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    "# server.py": "test_server_example_serves",
    "# shop.py": "test_shop_example_runs",
    "# dates.py": "test_dates_example_compares_refuses_and_takes_the_named_zone",
    "# files_server.py": "test_the_elicitation_example_asks_before_it_deletes",
    "# ask_server.py": "test_two_eras_example_asks_in_one_round_and_completes_on_the_retry",
}


def _block(marker: str) -> str:
    return block(PAGE, marker)


def write_server_example(folder, docs: bool = True) -> None:
    """The page's server.py, with (``docs``) a file in the docs/ folder it serves beside it."""
    if docs:
        (folder / "docs").mkdir()
        (folder / "docs" / "hello.txt").write_text("hello from docs\n")
    (folder / "server.py").write_text(_block("# server.py"))


@pytest.mark.slow
def test_server_example_serves(tmp_path, connect):
    from mcp_ref import CreateMessageResult, TextContent

    write_server_example(tmp_path)
    script = tmp_path / "server.py"
    client = connect(
        [sys.executable, str(script)],
        cwd=str(ROOT),  # docs/ is found beside the script, whatever the working directory
        sampling_handler=lambda params: CreateMessageResult(
            role="assistant", content=TextContent(text="hello"), model="m"
        ),
    )
    assert client.instructions == "Try the add tool."
    assert client.call_tool("add", {"a": 1, "b": 2}).content[0].text == "3"
    assert client.call_tool("weather", {"city": "Oslo"}).structured_content == {
        "city": "Oslo",
        "celsius": 21.5,
    }
    progress = []
    assert (
        client.call_tool("slow", {"steps": 2}, on_progress=lambda p, t, m: progress.append(p))
        .content[0]
        .text
        == "hello"
    )
    assert progress == [1, 2]
    assert client.read_resource("notes://todo").contents[0].text == "a note called todo"
    assert (
        client.get_prompt("greet", {"name": "Ada", "style": "formal"}).messages[0].content.text
        == "Good day, Ada."
    )
    docs = [r.uri for r in client.list_resources() if r.uri.endswith("hello.txt")]
    assert len(docs) == 1 and client.read_resource(docs[0]).contents[0].text == "hello from docs\n"


@pytest.mark.slow
def test_shop_example_runs(tmp_path):
    """Rich types both ways, an awaited ctx.info, the lifespan's value, and a ResourceError's message."""
    done = run_python(_block("# shop.py"), tmp_path, "shop.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    # the on_log callback prints from its own thread: its line may come between ours, so look for the texts
    # (each print has one argument: one write, never split by the other thread's)
    assert done.stdout.count("tea") >= 2  # the log line, and the resource read
    for text in (
        "ordering tea for 4.20, due 01 March",
        "4.20 2026-03-01",
        "-32603 no order 00000000-0000-0000-0000-000000000000",
    ):
        assert text in done.stdout, (text, done.stdout)


@pytest.mark.slow
def test_dates_example_compares_refuses_and_takes_the_named_zone(tmp_path):
    """An aware argument compares with the server's aware value; a date alone is refused naming
    the format; a value without an offset is taken in the zone the parameter names."""
    import zoneinfo

    try:
        zoneinfo.ZoneInfo("Europe/Paris")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time zone database on this system")
    done = run_python(_block("# dates.py"), tmp_path, "dates.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "true",
        "Invalid arguments for tool in_time: when: '2027-01-01' is a date without a time: "
        "expected an RFC 3339 date-time with an offset, e.g. '2027-01-01T09:00:00Z' or "
        "'2027-01-01T09:00:00+01:00'",
        "2027-07-01T09:00:00+02:00",
    ]


@pytest.mark.slow
def test_server_example_runs_as_pasted(tmp_path, connect):
    """server.py alone in an empty folder (no docs/ yet): it starts, serves, and makes the folder it serves."""
    write_server_example(tmp_path, docs=False)
    client = connect([sys.executable, str(tmp_path / "server.py")], cwd=str(ROOT))
    assert client.call_tool("add", {"a": 2, "b": 3}).content[0].text == "5"
    assert (tmp_path / "docs").is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_the_elicitation_example_asks_before_it_deletes(tmp_path, connect, era):
    """files_server.py over stdio: the user's answer decides; an unknown file is a tool error."""
    from mcp_ref import ElicitResult

    (tmp_path / "files_server.py").write_text(_block("# files_server.py"))
    asked = []

    def user(params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"sure": "b.txt" in params.message})

    client = connect(
        [sys.executable, str(tmp_path / "files_server.py")], era=era, elicitation_handler=user
    )
    assert client.call_tool("delete", {"name": "a.txt"}).text == "kept a.txt"
    assert client.call_tool("delete", {"name": "b.txt"}).text == "deleted b.txt"
    gone = client.call_tool("delete", {"name": "b.txt"})
    assert gone.is_error and gone.text == "no file called b.txt"
    assert asked == ["Delete a.txt?", "Delete b.txt?"]
    schema = client.list_tools()[0].input_schema
    assert schema["required"] == ["name"]


def test_two_eras_example_asks_in_one_round_and_completes_on_the_retry(tmp_path):
    """The 2026-07-28 example: the first call answers input_required with both asks; the retry completes."""
    import importlib.util

    source = tmp_path / "ask_server.py"
    source.write_text(_block("# ask_server.py"))
    spec = importlib.util.spec_from_file_location("ask_server", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import requests
    from http_fixtures import TIMEOUT, serving

    from mcp_ref.http.headers import request_headers

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
    }
    params = {"name": "plan", "arguments": {"city": "Lyon"}, "_meta": meta}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        **request_headers("tools/call", params),
    }

    def post(request_id, body_params):
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body_params}
        return requests.post(served.mcp, json=body, headers=headers, timeout=TIMEOUT).json()[
            "result"
        ]

    with serving(module.server) as served:
        first = post(1, params)
        assert first["resultType"] == "input_required" and set(first["inputRequests"]) == {
            "who",
            "idea",
        }
        done = post(
            2,
            {
                **params,
                "requestState": first["requestState"],
                "inputResponses": {
                    "who": {"action": "accept", "content": {"name": "Ada"}},
                    "idea": {
                        "role": "assistant",
                        "content": {"type": "text", "text": "the old town"},
                        "model": "m",
                    },
                },
            },
        )
    assert done["content"][0]["text"] == "Ada goes to Lyon: the old town"


def test_the_lifespan_is_introduced_with_the_threads_its_handlers_run_on():
    """Issue 34, item 3: where the lifespan is introduced, say that handlers run on other threads."""
    text = " ".join(PAGE.read_text().split())
    assert (
        "Handlers run on the server's worker threads, not on the thread that entered the "
        "lifespan: a resource tied to one thread, such as a `sqlite3` connection, needs the "
        "pattern in [the lifespan page](lifespan.md)." in text
    )
    assert "database pool here" not in text  # the README's old hint, which sqlite3 broke
