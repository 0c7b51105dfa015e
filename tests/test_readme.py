"""The README tells the truth: its set-up commands, and its code examples run as written."""

import re
import subprocess
import sys

from conftest import ROOT, WAIT

README = (ROOT / "README.md").read_text()


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, re.S)


def test_readme_opens_with_the_two_setup_commands():
    first_block = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert first_block == ['pip install -e ".[test]" && mcp-ref demo', "python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\npython -m pytest\n" in ci and 'pip install --quiet --disable-pip-version-check -e ".[test]"' in ci


def test_client_tour_runs(tmp_path):
    tour = next(b for b in _python_blocks() if "Client.stdio([sys.executable" in b)
    script = tmp_path / "tour.py"
    script.write_text(tour)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "mcp-ref-demo 2025-11-25"
    assert "hi False" in lines
    assert "Hey Ada!" in lines


def test_server_example_serves(tmp_path, connect):
    from mcp_ref import CreateMessageResult, TextContent

    example = next(b for b in _python_blocks() if 'Server("example"' in b)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "hello.txt").write_text("hello from docs\n")
    script = tmp_path / "server.py"
    script.write_text(example)
    client = connect(
        [sys.executable, str(script)],
        cwd=str(tmp_path),
        sampling_handler=lambda params: CreateMessageResult(role="assistant", content=TextContent(text="hello"), model="m"),
    )
    assert client.instructions == "Try the add tool."
    assert client.call_tool("add", {"a": 1, "b": 2}).content[0].text == "3"
    assert client.call_tool("weather", {"city": "Oslo"}).structured_content == {"city": "Oslo", "celsius": 21.5}
    progress = []
    assert client.call_tool("slow", {"steps": 2}, on_progress=lambda p, t, m: progress.append(p)).content[0].text == "hello"
    assert progress == [1, 2]
    assert client.read_resource("notes://todo").contents[0].text == "a note called todo"
    assert client.get_prompt("greet", {"name": "Ada", "style": "formal"}).messages[0].content.text == "Good day, Ada."
    docs = [r.uri for r in client.list_resources() if r.uri.endswith("hello.txt")]
    assert len(docs) == 1 and client.read_resource(docs[0]).contents[0].text == "hello from docs\n"


def test_in_memory_example_runs(tmp_path):
    example = next(b for b in _python_blocks() if "Client.in_memory(server)" in b)
    script = tmp_path / "in_memory.py"
    script.write_text(example)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
