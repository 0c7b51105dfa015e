"""How ``mcp-ref`` reads its command line (mcp_ref/workbench/cli_grammar.py): TARGET unquoted or
after ``--``, ``call`` without a TOOL, one-line usage errors (exit 2), ``VERB --help`` for every
verb, and an object parameter's fields in ``tools``.

The client verbs run against the real demo server (``python -m mcp_ref serve-demo``, launched by
the command); the command itself runs in this process (conftest.run_cli) unless the process is
the point.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
from conftest import WAIT, run_cli

from mcp_ref.workbench.cli_grammar import VERBS, build_parser

#: The demo's command line as separate words (unquoted on mcp-ref's command line).
DEMO_WORDS = [sys.executable, "-m", "mcp_ref", "serve-demo"]
QUOTED = f'"{sys.executable}" -m mcp_ref serve-demo'


def one_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- TARGET unquoted, or after -- -----------------------------------------------------------------


@pytest.mark.slow
def test_an_unquoted_command_is_the_target_of_a_listing_verb():
    """``mcp-ref tools python -m mcp_ref serve-demo``: the command's own option (-m) too."""
    unquoted = run_cli("tools", *DEMO_WORDS)
    assert unquoted.returncode == 0, unquoted.stderr
    assert unquoted.stdout == run_cli("tools", QUOTED).stdout
    assert unquoted.stdout.startswith("echo(text: string)")
    info = run_cli("info", *DEMO_WORDS, "--json")  # our options still ours, after it
    assert info.returncode == 0 and '"protocolVersion"' in info.stdout


@pytest.mark.slow
def test_call_read_and_prompt_take_an_unquoted_command():
    """The word before the trailing KEY=VALUE words is the TOOL (or NAME); read's last word the URI."""
    call = run_cli("call", *DEMO_WORDS, "add", "a=1", "b=2")
    assert (call.returncode, call.stdout) == (0, "3\n"), call.stderr
    no_pairs = run_cli("call", *DEMO_WORDS, "echo", "--args", '{"text": "hi"}')
    assert (no_pairs.returncode, no_pairs.stdout) == (0, "hi\n"), no_pairs.stderr
    read = run_cli("read", *DEMO_WORDS, "demo://readme")
    assert read.returncode == 0 and read.stdout, read.stderr
    prompt = run_cli("prompt", *DEMO_WORDS, "greet", "name=Ada")
    assert prompt.returncode == 0 and "Ada" in prompt.stdout, prompt.stderr


@pytest.mark.slow
def test_the_command_after_two_dashes():
    """After --, the server's command verbatim (its options are not ours, even --json)."""
    call = run_cli("call", "add", "a=1", "b=2", "--", *DEMO_WORDS)
    assert (call.returncode, call.stdout) == (0, "3\n"), call.stderr
    read = run_cli("--json", "read", "demo://readme", "--", *DEMO_WORDS)
    assert read.returncode == 0 and '"contents"' in read.stdout
    # --trace after -- is the server's (serve-demo's own --trace: the server's side on its stderr),
    # not ours: nothing on our stderr starts with "--> "
    tools = run_cli("--quiet-server", "tools", "--", *DEMO_WORDS, "--trace")
    assert tools.returncode == 0 and not any(
        line.startswith("--> ") for line in tools.stderr.splitlines()
    )


@pytest.mark.slow
def test_call_without_a_tool_lists_the_tools_and_asks_for_one():
    for args in (["call", QUOTED], ["call", "--", *DEMO_WORDS]):
        proc = run_cli(*args)
        assert proc.returncode == 2
        assert proc.stdout.startswith("echo(text: string)")
        assert one_line(proc).startswith("mcp-ref: name a tool: mcp-ref call TARGET TOOL")


def test_call_with_arguments_but_no_tool_is_refused_before_launching():
    proc = run_cli("call", "a=1", "--", "no-such-command-for-mcp-ref-tests")
    assert proc.returncode == 2
    assert "arguments but no TOOL" in one_line(proc)


@pytest.mark.parametrize(
    "words, target, rest",
    [
        (["python", "server.py"], "python server.py", []),  # tools: every word
        (["python server.py"], "python server.py", []),  # quoted: as before
        (["http://h/mcp"], "http://h/mcp", []),
    ],
)
def test_target_words_of_a_listing_verb(words, target, rest):
    from mcp_ref.workbench.cli_grammar import parse

    args = parse(["tools", *words])
    assert args.target == target


@pytest.mark.parametrize(
    "argv, target, tool, pairs",
    [
        (["call", "python server.py", "add", "a=1"], "python server.py", "add", ["a=1"]),
        (["call", "python", "server.py", "add", "a=1"], "python server.py", "add", ["a=1"]),
        (["call", "python", "server.py", "add"], "python server.py", "add", []),
        (
            ["call", "python", "-m", "srv", "add", "x=1", "y=2"],
            "python -m srv",
            "add",
            ["x=1", "y=2"],
        ),
        # a command with KEY=VALUE words of its own: only the trailing ones are the tool's
        (
            ["call", "env", "A=1", "python", "s.py", "add", "a=1"],
            "env A=1 python s.py",
            "add",
            ["a=1"],
        ),
        # the last word names a file: the command, no TOOL
        (["call", "python", "dir/server.py"], "python dir/server.py", None, []),
        (["call", "python server.py"], "python server.py", None, []),
        (
            ["call", "add", "a=1", "--", "python", "server.py", "--db", "x"],
            "python server.py --db x",
            "add",
            ["a=1"],
        ),
        (["call", "--", "python", "server.py"], "python server.py", None, []),
        (["call", "http://h/mcp", "add", "a=1"], "http://h/mcp", "add", ["a=1"]),
        (["call", "'my server' --flag", "add"], "'my server' --flag", "add", []),
    ],
)
def test_call_words(argv, target, tool, pairs):
    from mcp_ref.workbench.cli_grammar import parse

    args = parse(argv)
    assert (args.target, args.tool, args.pairs) == (target, tool, pairs)


def test_read_and_prompt_words():
    from mcp_ref.workbench.cli_grammar import parse

    read = parse(["read", "python", "server.py", "docs://a"])
    assert (read.target, read.uri) == ("python server.py", "docs://a")
    prompt = parse(["prompt", "python", "server.py", "greet", "name=Ada"])
    assert (prompt.target, prompt.name, prompt.pairs) == ("python server.py", "greet", ["name=Ada"])
    after = parse(["prompt", "greet", "--", "python", "server.py"])
    assert (after.target, after.name, after.pairs) == ("python server.py", "greet", [])
    run = parse(["run", "server.py:app", "--http", "127.0.0.1:0", "--", "--db", "x"])
    assert (run.server, run.server_args, run.http) == (
        "server.py:app",
        ["--db", "x"],
        "127.0.0.1:0",
    )


def test_an_unquoted_command_with_spaces_in_a_word_is_quoted_back():
    """Several words: quoted back into one command line, so each word stays one word."""
    import shlex

    from mcp_ref.workbench.cli_grammar import parse

    args = parse(["tools", "python", "my server.py"])
    assert shlex.split(args.target) == ["python", "my server.py"]


# -- misuse: one line, exit 2 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, said, verb",
    [
        (
            ["--timeout", "-1", "tools", "x"],
            "argument --timeout: must be a positive number",
            "tools",
        ),
        (["call"], "call needs TARGET, the server: a command line or a URL", "call"),
        (["frobnicate"], "unknown verb 'frobnicate'; the verbs: info, tools,", None),
        (["tool", "x"], "unknown verb 'tool' (did you mean tools?)", None),
        ([], "name a verb: info, tools,", None),
        (["--timeout", "5"], "name a verb: info, tools,", None),  # options, no verb
        (["--bogus"], "unknown option --bogus", None),
        # before the verb: never dropped silently (a typo, or a verb's own option put first)
        (["--quite", "tools", "python", "server.py"], "unknown option --quite (did you", "tools"),
        (
            ["--call-tools", "check", "python", "server.py"],
            "--call-tools is an option of check: put it after the verb",
            "check",
        ),
        (["tools", "--bogus", "x"], "unknown option --bogus; if it is the server's, put", "tools"),
        # "info" the value of --log-level, "tools" the verb
        (["--log-level", "info", "tools", "--bogus", "x"], "unknown option --bogus", "tools"),
        (["call", "python server.py", "add", "--bogus"], "unknown option --bogus", "call"),
        (["read", "python server.py"], "read takes TARGET and one URI: name the URI", "read"),
        (["prompt", "python server.py"], "name the prompt", "prompt"),
        (["tools", "python server.py", "extra"], "tools takes only TARGET, not 'extra'", "tools"),
        (
            [
                "tools",
                "--",
            ],
            "-- is followed by nothing",
            "tools",
        ),
        (["--era", "future", "info", "x"], "argument --era: invalid choice: 'future'", "info"),
        (["logout"], "logout takes one URL", "logout"),
        (["demo", "extra"], "demo takes no words", "demo"),
        (["run"], "name the server to run", "run"),
    ],
)
def test_misuse_is_one_line_naming_the_help_to_read(args, said, verb):
    proc = run_cli(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_line(proc)
    assert line.startswith("mcp-ref: error: ") and said in line, line
    see = f"mcp-ref {verb} --help" if verb else "mcp-ref --help"
    assert line.endswith(f"(see `{see}`)"), line


def test_a_verbs_option_before_the_verb_is_refused_and_nothing_is_done(tmp_path):
    """``mcp-ref --print install ...``: install's own --print, put before the verb, was dropped
    and the configuration written.  It is a usage error now (docs/command-line.md: an option
    mcp-ref does not take there is one), and no file is written."""
    config = tmp_path / "claude.json"
    argv = ["--print", "install", "--name", "notes", "--config", str(config), "python", "s.py"]
    proc = run_cli(*argv)
    assert proc.returncode == 2 and proc.stdout == ""
    assert one_line(proc) == (
        "mcp-ref: error: --print is an option of install: put it after the verb: "
        "mcp-ref install --print ... (see `mcp-ref install --help`)"
    )
    assert not config.exists() and list(tmp_path.iterdir()) == []


def test_a_verbs_option_and_its_value_before_the_verb_say_so_and_nothing_is_done(tmp_path):
    """``mcp-ref --name notes install ...``: argparse read ``notes`` as the verb, and the message
    named an unknown verb 'notes'.  It names the misplaced option, with its value, now."""
    config = tmp_path / "claude.json"
    argv = ["--name", "notes", "install", "--config", str(config), "python", "s.py"]
    proc = run_cli(*argv)
    assert proc.returncode == 2 and proc.stdout == ""
    assert one_line(proc) == (
        "mcp-ref: error: --name is an option of install: put it after the verb: "
        "mcp-ref install --name notes ... (see `mcp-ref install --help`)"
    )
    assert not config.exists() and list(tmp_path.iterdir()) == []


def _options_taking_a_value() -> list[tuple[str, str]]:
    """(verb, option) for every option of one verb (not of every verb) that takes a value."""
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    every_verbs = {flag for action in parser._actions for flag in action.option_strings}
    return [
        (name, action.option_strings[-1])
        for name, sub in verbs.choices.items()
        for action in sub._actions
        if action.option_strings
        and action.nargs != 0
        and not every_verbs & set(action.option_strings)
    ]


@pytest.mark.parametrize("verb, option", _options_taking_a_value())
def test_every_verbs_option_with_its_value_before_the_verb_names_the_option(verb, option):
    """The value is not taken for a verb, whichever verb's option it is."""
    proc = run_cli(option, "some-value", verb, "python", "s.py")
    assert proc.returncode == 2 and proc.stdout == ""
    assert one_line(proc) == (
        f"mcp-ref: error: {option} is an option of {verb}: put it after the verb: "
        f"mcp-ref {verb} {option} some-value ... (see `mcp-ref {verb} --help`)"
    )


@pytest.mark.parametrize("verb", [verb.name for verb in VERBS])
def test_every_verb_has_a_help_with_a_description_and_examples(verb):
    proc = run_cli(verb, "--help")
    assert proc.returncode == 0 and proc.stderr == ""
    text = proc.stdout
    spec = next(v for v in VERBS if v.name == verb)
    assert text.startswith(f"usage: {spec.usage}")
    assert "examples:\n" in text and all(f"  {line}\n" in text for line in spec.examples)
    assert " ".join(spec.description.split()[:6]) in " ".join(text.split())
    assert "options of every verb" in text


def test_the_top_level_help_lists_every_verb():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for verb in VERBS:
        assert f"    {verb.name} " in proc.stdout


@pytest.mark.slow
def test_the_real_command_prints_one_line_for_misuse():
    """The process itself (``python -m mcp_ref``): exit 2, one line, no usage block."""
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_ref", "--timeout", "-1", "tools", "x"],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "mcp-ref: error: argument --timeout: must be a positive number of seconds, not -1 "
        "(see `mcp-ref tools --help`)\n"
    )


# -- tools: an object parameter's fields ----------------------------------------------------------

MODELS_PY = """\
from typing import Optional

from pydantic import BaseModel, Field

from mcp_ref import Server


class Tag(BaseModel):
    name: str
    color: str = "red"


class Bookmark(BaseModel):
    url: str
    title: Optional[str] = None
    tags: list[Tag] = []
    rating: int = Field(3, ge=1, le=5)


server = Server("bookmarks")


@server.tool()
def save(bookmark: Bookmark, notify: bool = False) -> str:
    \"\"\"Save a bookmark.\"\"\"
    return bookmark.url
"""


@pytest.mark.slow
def test_tools_shows_a_pydantic_model_parameters_fields(tmp_path):
    pytest.importorskip("pydantic")
    (tmp_path / "models.py").write_text(MODELS_PY)
    proc = run_cli("tools", sys.executable, "-m", "mcp_ref", "run", str(tmp_path / "models.py"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "save(bookmark: {url: string, title?: string|null, tags?: {name: string, color?: string}[], "
        "rating?: integer}, notify: boolean = false)  Save a bookmark.\n"
    )


def test_object_fields_are_bounded_in_width_and_depth():
    from mcp_ref.workbench.cli_output import MAX_FIELDS, schema_type

    wide = {"type": "object", "properties": {f"f{i}": {"type": "integer"} for i in range(20)}}
    shown = schema_type(wide)
    assert shown.count(": integer") == MAX_FIELDS and shown.endswith(", …}")

    def nest(levels: int) -> dict:
        inner: dict = {"type": "object", "title": "Leaf", "properties": {"x": {"type": "number"}}}
        for level in range(levels):
            inner = {
                "type": "object",
                "title": f"L{level}",
                "properties": {"child": inner},
                "required": ["child"],
            }
        return inner

    assert schema_type(nest(5)) == "{child: {child: {child: L1}}}"
    assert (
        schema_type({"type": "object", "additionalProperties": {"type": "integer"}})
        == "{*: integer}"
    )
    assert schema_type({"type": "object"}) == "object"


def test_a_failed_launch_says_how_an_unquoted_call_was_read():
    """No KEY=VALUE words: the last word as TOOL is a guess; when the launch fails, it is said."""
    guessed = run_cli("call", "no-such-command-for-mcp-ref-tests", "--flag", "tool")
    assert guessed.returncode == 4
    assert one_line(guessed).endswith(
        "(the words were read as TARGET 'no-such-command-for-mcp-ref-tests --flag' and TOOL "
        "'tool'; if the tool's name is not the last word, quote the server's command or put it "
        "last, after --)"
    )
    # with KEY=VALUE words nothing was guessed
    clear = run_cli("call", "no-such-command-for-mcp-ref-tests", "--flag", "tool", "a=1")
    assert clear.returncode == 4 and "read as" not in clear.stderr
