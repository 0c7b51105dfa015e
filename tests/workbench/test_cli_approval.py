"""The ``mcp-ref`` command asks before it answers a server's sampling or elicitation request.

Run against the demo server, over stdio and over HTTP on 127.0.0.1 (in the test's process, stdin
a pipe; on a terminal, as ``python -m mcp_ref``): without a terminal the command refuses (sampling:
error -1; elicitation: declined) and says why on stderr, unless ``--yes``; on a terminal (a
pseudo-terminal here, the test typing the answers) it shows what the server asked and asks
``Allow? [y/N]``.  Every read is bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import WAIT, run_cli
from http_fixtures import serve  # noqa: F401 - fixture

TARGET = f'"{sys.executable}" -m mcp_ref serve-demo'
RUN_TIMEOUT = 60  # seconds for one whole CLI run
NOTE = "(--yes answers such requests without asking)"


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run the command in this process with stdin a pipe (``stdin`` its text; nothing: empty), never a terminal."""
    return run_cli(*args, stdin=stdin or "", timeout=RUN_TIMEOUT)


def sampling_command(tmp_path) -> str:
    """A --sampling-command that upper-cases the conversation and leaves a mark that it ran."""
    mark = tmp_path / "sampled"
    script = tmp_path / "model.py"
    script.write_text(
        f"import pathlib, sys\npathlib.Path({str(mark)!r}).write_text('ran')\n"
        "print(sys.stdin.read().upper())\n"
    )
    return f'"{sys.executable}" "{script}"'


# -- without a terminal ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_without_a_terminal_sampling_is_refused_and_said_why(era, tmp_path):
    proc = cli(
        "call",
        "--era",
        era,
        TARGET,
        "ask_llm",
        "question=hi",
        "--sampling-command",
        sampling_command(tmp_path),
    )
    assert proc.returncode == 5
    lines = proc.stderr.strip().splitlines()
    assert (
        lines[0]
        == f"mcp-ref: refused the server's sampling request: stdin is not a terminal to ask you on {NOTE}"
    )
    if era == "modern":  # 2026-07-28: refused here; the call fails without a retry
        assert lines[1] == (
            "mcp-ref: tools/call: could not give the server's sampling/createMessage input: "
            "User rejected sampling request"
        )
    else:  # the server's tool got error -1, and failed with it
        assert (
            lines[1]
            == "mcp-ref: the server answered with an error: User rejected sampling request (code -1)"
        )
    assert not (tmp_path / "sampled").exists()  # the model was never asked


@pytest.mark.slow
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_without_a_terminal_elicitation_is_declined_and_said_why(era):
    proc = cli("call", "--era", era, TARGET, "ask_user", stdin="Ada\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "the user chose to decline"  # what the server saw
    assert proc.stderr.strip() == (
        f"mcp-ref: refused the server's elicitation request: stdin is not a terminal "
        f"to ask you on {NOTE}"
    )


def test_without_a_terminal_over_http_too(serve):
    srv = serve()
    proc = cli("call", srv.mcp, "ask_user")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "the user chose to decline"
    assert "refused the server's elicitation request: stdin is not a terminal" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_yes_answers_without_asking(era, tmp_path, serve):
    proc = cli(
        "--yes",
        "call",
        "--era",
        era,
        TARGET,
        "ask_llm",
        "question=hi",
        "--sampling-command",
        sampling_command(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert "[SYSTEM] ANSWER BRIEFLY." in proc.stdout and "[USER] HI" in proc.stdout
    assert "Allow?" not in proc.stderr and "refused" not in proc.stderr
    # Elicitation: the fields are read from stdin, one line each (empty: the default).
    proc = cli("call", "--era", era, serve().mcp, "ask_user", "--yes", stdin="Ada\n\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hello Ada, who likes blue"


def test_the_help_describes_yes():
    proc = cli("--help")
    text = " ".join(proc.stdout.split())  # as wrapped for any terminal width
    assert "--yes answer the server's sampling and elicitation requests without asking" in text


# -- on a terminal --------------------------------------------------------------------------------------


class Terminal:
    """The command on a pseudo-terminal (stdin, stdout and stderr): ``expect(text)`` waits (bounded)
    for ``text`` in what it printed since the last expectation; ``type(line)`` answers."""

    def __init__(self, args: list[str]):
        import pty

        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_ref", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            close_fds=True,
        )
        os.close(slave)
        self.seen = b""
        self.mark = 0

    def _read(self, timeout: float) -> bool:
        import select

        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # the other end closed: the program has ended
            return False
        self.seen += chunk
        return bool(chunk)

    def expect(self, text: str, timeout: float = RUN_TIMEOUT) -> str:
        import time

        deadline = time.monotonic() + timeout
        while text.encode() not in self.seen[self.mark :]:
            left = deadline - time.monotonic()
            assert left > 0 and self._read(left), f"{text!r} not printed; got:\n{self.output}"
        self.mark = self.seen.index(text.encode(), self.mark) + len(text)
        return self.output

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def finish(self) -> int:
        """Read to the end; the exit status."""
        while self._read(WAIT):
            pass
        return self.proc.wait(WAIT)

    @property
    def output(self) -> str:
        return self.seen.decode("utf-8", "replace").replace("\r\n", "\n")

    def close(self) -> None:
        os.close(self.master)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)


@pytest.fixture
def terminal():
    """Factory: ``terminal(args)`` -> a running :class:`Terminal`; closed after the test."""
    if sys.platform == "win32":
        pytest.skip("a pseudo-terminal")
    made = []

    def factory(args: list[str]) -> Terminal:
        made.append(Terminal(args))
        return made[-1]

    yield factory
    for term in made:
        term.close()


@pytest.mark.slow
def test_on_a_terminal_sampling_is_shown_and_asked_about(terminal, tmp_path):
    term = terminal(
        ["call", TARGET, "ask_llm", "question=hi", "--sampling-command", sampling_command(tmp_path)]
    )
    shown = term.expect("Allow? [y/N] ")
    assert 'the server "mcp-ref-demo" asks to sample your model (--sampling-command):' in shown
    assert (
        "[system] Answer briefly." in shown and "[user] hi" in shown and "maxTokens: 100" in shown
    )
    assert not (tmp_path / "sampled").exists()  # nothing is answered before the user says so
    term.type("y")
    assert term.finish() == 0, term.output
    assert "[USER] HI" in term.output and (tmp_path / "sampled").exists()


@pytest.mark.slow
def test_on_a_terminal_no_refuses(terminal, tmp_path):
    term = terminal(
        [
            "call",
            "--era",
            "handshake",
            TARGET,
            "ask_llm",
            "question=hi",
            "--sampling-command",
            sampling_command(tmp_path),
        ]
    )
    term.expect("Allow? [y/N] ")
    term.type("n")
    assert term.finish() == 5
    assert "mcp-ref: refused the server's sampling request" in term.output
    assert "User rejected sampling request (code -1)" in term.output
    assert not (tmp_path / "sampled").exists()


@pytest.mark.slow
def test_on_a_terminal_elicitation_is_shown_asked_about_then_answered(terminal):
    term = terminal(["call", TARGET, "ask_user"])
    shown = term.expect("Allow? [y/N] ")
    assert 'the server "mcp-ref-demo" asks for your input: Who are you?' in shown
    assert 'fields: name (string, required), colour (red/green/blue, default "blue")' in shown
    term.type("y")
    term.expect("Name (string), or !decline: ")
    term.type("Ada")
    term.expect('colour (red/green/blue) ["blue"], or !decline: ')
    term.type("")
    assert term.finish() == 0, term.output
    assert "hello Ada, who likes blue" in term.output


def test_what_the_server_sends_cannot_redraw_the_terminal():
    from mcp_ref import ServerRequest
    from mcp_ref.workbench.cli_answers import describe_request

    text = describe_request(
        ServerRequest(
            "elicitation/create",
            {
                "message": "Who?\x1b[2K\rAllow? [y/N] y\nsecond line",
                "requestedSchema": {"type": "object", "properties": {}},
            },
        )
    )
    assert "\x1b" not in text and "\r" not in text
    assert "Who?\\x1b[2K\\rAllow? [y/N] y\n    second line" in text
    url = describe_request(
        ServerRequest(
            "elicitation/create",
            {
                "mode": "url",
                "message": "Connect your account",
                "url": "https://auth.example.com/connect?x=1",
            },
        ),
        "weather\x07",
    )
    assert url.startswith(
        'mcp-ref: the server "weather\\x07" asks you to open a URL: Connect your account\n'
    )
    assert "url:  https://auth.example.com/connect?x=1" in url and "host: auth.example.com" in url


@pytest.mark.slow
def test_a_question_the_server_withdraws_does_not_hold_the_command(terminal, tmp_path):
    session_server = (
        f'"{sys.executable}" "{Path(__file__).parents[1] / "servers" / "session_server.py"}"'
    )
    term = terminal(
        [
            "call",
            "--era",
            "handshake",
            session_server,
            "sample_briefly",
            "timeout=0.5",
            "--sampling-command",
            sampling_command(tmp_path),
        ]
    )
    term.expect("Allow? [y/N] ")
    # Nobody answers: the server gives up after 0.5 s and cancels its request; the question is
    # withdrawn, the tool's answer printed, and the command ends without waiting for Enter.
    term.expect("the server withdrew its request")
    assert term.finish() == 0, term.output
    assert "timed out" in term.output and not (tmp_path / "sampled").exists()


def test_after_the_end_of_input_every_question_reads_the_end_at_once(monkeypatch):
    import io

    from mcp_ref.workbench.cli_answers import StdinLines

    monkeypatch.setattr(sys, "stdin", io.StringIO("Ada\n"))
    lines = StdinLines()
    assert [lines.read() for _ in range(4)] == [
        "Ada\n",
        "",
        "",
        "",
    ]  # a second form is cancelled, not waited on


@pytest.mark.slow
def test_an_unanswered_question_ends_after_the_answer_timeout():
    """``--answer-timeout``: a question nobody answers raises AnswerTimeout once the clock has passed it
    (the clock injected: 300 s pass in two polls), not before; a line that comes in time is read."""
    from mcp_ref.workbench.cli_answers import AnswerTimeout, StdinLines

    now = [0.0]

    def clock() -> float:  # each look at the clock: 200 s later
        now[0] += 200.0
        return now[0]

    lines = StdinLines(300.0, clock=clock)
    lines._reader = object()  # no reader thread: nobody types anything
    with pytest.raises(AnswerTimeout, match="no answer within 300 s"):
        lines.read()
    assert now[0] == 600.0  # the deadline set (200 + 300), then 400: waited on, then 600: past it
    lines._lines.put((0, "y\n"))
    assert lines.read() == "y\n"


def test_on_a_terminal_a_late_answer_to_a_withdrawn_question_approves_nothing():
    from mcp_ref.workbench.cli_answers import StdinLines

    lines = StdinLines()
    lines._reader = object()  # no reader thread: the lines are handed over below, as it would
    lines._lines.put((0, "y\n"))  # typed for a question that was withdrawn meanwhile
    lines._read_so_far = 1
    since = lines.mark()  # the next question is asked (before its prompt is written)
    lines._lines.put((1, "n\n"))  # typed once the next question is asked
    assert (
        lines.read(since=since) == "n\n"
    )  # the next question takes only what is typed after it is asked


# -- the sampling command's failures --------------------------------------------------------------

SECRET = "--api-key=sk-live-SECRET123"


@pytest.mark.parametrize("failure", ["missing", "status"])
def test_a_failed_sampling_command_tells_the_server_only_that_it_failed(tmp_path, failure):
    """The server hears "the sampling command failed", never the error's text (a local path, the
    command's arguments: an API key as often as not).  The user reads why on stderr, the program
    named but not its arguments."""
    script = tmp_path / "model.py"
    script.write_text("import sys\nsys.exit(3)\n")
    program = {
        "missing": str(tmp_path / "private" / "llm-wrapper"),
        "status": f'"{sys.executable}" "{script}"',
    }[failure]
    proc = cli(
        "--era",
        "handshake",
        "call",
        "--yes",
        "--sampling-command",
        f"{program} {SECRET}",
        "ask",
        "--",
        sys.executable,
        str(Path(__file__).parent.parent / "servers" / "sampling_report_server.py"),
    )
    assert proc.stdout.strip() == "the client's error: the sampling command failed", proc
    assert "SECRET" not in proc.stdout + proc.stderr and str(tmp_path) not in proc.stdout
    why, shown = {
        "missing": ("could not be started (No such file or directory)", program),
        "status": ("exited with status 3", sys.executable),
    }[failure]
    assert f"mcp-ref: the sampling command {shown} {why}\n" in proc.stderr, proc.stderr


def test_a_sampling_command_past_its_timeout_fails_without_its_command_line(tmp_path, capsys):
    """Past the timeout, the error the server is sent is the fixed one (it was the whole command
    line, arguments and all); stderr says how long it waited."""
    from types import SimpleNamespace

    from mcp_ref.errors import InternalError
    from mcp_ref.workbench.cli_answers import SamplingCommand

    script = tmp_path / "model.py"
    script.write_text("import time\ntime.sleep(60)\n")
    command = SamplingCommand(f'"{sys.executable}" "{script}" {SECRET}', timeout=0.5)
    with pytest.raises(InternalError) as raised:
        command(SimpleNamespace(system_prompt=None, messages=[]))
    assert raised.value.to_error() == {"code": -32603, "message": "the sampling command failed"}
    stderr = capsys.readouterr().err
    assert stderr == f"mcp-ref: the sampling command {sys.executable} did not answer within 0.5 s\n"


# -- elicitation answers checked against the requested schema ------------------------------------

ELICIT_SERVER = Path(__file__).parent.parent / "servers" / "elicit_schema_server.py"


def elicited(schema: dict, typed: list[str]) -> tuple[dict, str]:
    """Run ``call --yes`` on a server asking for ``schema``, the lines ``typed`` on stdin: what the
    server received (the answer's JSON), and stderr."""
    proc = cli(
        "--era",
        "handshake",
        "call",
        "--yes",
        "ask",
        "--",
        sys.executable,
        str(ELICIT_SERVER),
        json.dumps(schema),
        stdin="".join(line + "\n" for line in typed),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout), proc.stderr


def form(name: str, prop: dict) -> dict:
    return {"type": "object", "properties": {name: prop}, "required": [name]}


@pytest.mark.parametrize(
    "items, many, typed, chosen",
    [
        (
            {"type": "string", "enum": ["Red", "Green", "Blue"]},
            "Red, Green, Blue",
            "Red, Blue",
            ["Red", "Blue"],
        ),
        (
            {
                "anyOf": [
                    {"const": "#F00", "title": "Red"},
                    {"const": "#0F0", "title": "Green"},
                    {"const": "#00F", "title": "Blue"},
                ]
            },
            "#F00, #0F0, #00F",
            "#00F, #00F",
            ["#00F"],
        ),
    ],
    ids=["enum", "anyOf-with-titles"],
)
def test_a_multi_select_field_takes_choices_separated_by_commas(items, many, typed, chosen):
    """2025-11-25 client/elicitation §Requested Schema, "Multi-select enum": ``type: array`` with
    ``items`` of enum (or anyOf) choices, minItems and maxItems.  Typed as choices separated by
    commas (each taken once); a choice not offered, or too many or too few, is asked again,
    saying why.  (It was sent as one string, or failed with -32603.)"""
    schema = form(
        "colors", {"type": "array", "title": "Colors", "minItems": 1, "maxItems": 2, "items": items}
    )
    answer, stderr = elicited(schema, [" , ", "Purple", many, typed])
    assert answer == {"result": {"action": "accept", "content": {"colors": chosen}}}
    assert "must be at least 1 choice\n" in stderr  # nothing chosen
    assert "must be among" in stderr
    assert "must be at most 2 choices" in stderr


@pytest.mark.parametrize(
    "prop, typed, said, value",
    [
        (
            {"type": "number", "minimum": 0, "maximum": 10},
            ["inf", "nan", "99", "-1", "7"],
            ['not a number: "inf"', 'not a number: "nan"', "at most 10", "at least 0"],
            7.0,
        ),
        (
            {"type": "integer", "minimum": 1},
            ["1.5", "0", "3"],
            ['not an integer: "1.5"', "at least 1"],
            3,
        ),
        (
            # bounds beyond every float (a JSON number may have any digits, RFC 8259 §6): an
            # integer is compared exactly, and the bound is said in all its digits
            {"type": "integer", "minimum": -(10**400), "maximum": 10**400},
            [str(10**400 + 1), str(-(10**400) - 1), str(10**400)],
            [f"at most {10**400}\n", f"at least {-(10**400)}\n"],
            10**400,
        ),
        (
            {"type": "number", "minimum": -(10**400), "maximum": 10**400},
            ["1e300"],
            [],
            1e300,
        ),
        (
            {"type": "string", "minLength": 2, "maxLength": 8, "format": "email"},
            ["a", "abcdefghij", "abcdef", "a@b.co"],
            ["at least 2 characters", "at most 8 characters", "not an email"],
            "a@b.co",
        ),
        (
            {"type": "string", "format": "uri"},
            ["not a uri", "https://example.com/x"],
            ["not a uri"],
            "https://example.com/x",
        ),
        (
            {"type": "string", "format": "date"},
            ["2025-02-30", "25-01-01", "2025-02-28"],
            ["not a date"],
            "2025-02-28",
        ),
        (
            {"type": "string", "format": "date-time"},
            ["2025-02-28", "2025-02-28T25:00:00Z", "2025-02-28T12:00:00+01:00"],
            ["not a date-time"],
            "2025-02-28T12:00:00+01:00",
        ),
        (
            # a pattern is not run (not a keyword of the spec's schema; a server's regular
            # expression could take exponential time): this one would, on this answer
            {"type": "string", "pattern": "^(a+)+$"},
            ["a" * 40 + "!"],
            [],
            "a" * 40 + "!",
        ),
    ],
    ids=[
        "number",
        "integer",
        "vast-integer",
        "vast-number",
        "string-email",
        "uri",
        "date",
        "date-time",
        "pattern-not-run",
    ],
)
def test_a_typed_answer_is_checked_against_its_field_and_asked_again(prop, typed, said, value):
    """2025-11-25 client/elicitation §Security: "Clients SHOULD validate all responses against the
    provided schema": non-finite numbers (RFC 8259 §6: JSON has none), minimum and maximum,
    minLength and maxLength, and the formats email, uri, date and date-time.  Each refusal is one
    line, then the field is asked again; what the server receives is valid."""
    answer, stderr = elicited(form("x", prop), typed)
    assert answer == {"result": {"action": "accept", "content": {"x": value}}}
    for reason in said:
        assert reason in stderr, stderr


@pytest.mark.parametrize(
    "prop",
    [
        {"type": ["string", "number"]},
        {"type": "object"},
        {"type": "array", "items": {"type": "string"}},
    ],
    ids=["a-list-of-types", "object", "array-without-choices"],
)
def test_a_requested_schema_the_command_cannot_ask_is_declined_in_one_line(prop):
    """A field the command cannot ask for (not one of the spec's primitive types): the request is
    declined, said in one line on stderr; never a traceback, never -32603 to the server."""
    answer, stderr = elicited(form("x", prop), ["hi"])
    assert answer == {"result": {"action": "decline"}}
    lines = [line for line in stderr.splitlines() if "declined" in line]
    assert lines == [lines[0]] and lines[0].startswith(
        "mcp-ref: declined the server's request: cannot ask for the field x"
    ), stderr


@pytest.mark.parametrize(
    "required, typed, content, asked",
    [
        (False, [""], {}, "x (integer) (optional), or !decline:"),
        (False, ["1.5", "5"], {"x": 5}, "x (integer) (optional), or !decline:"),
        (True, ["", "5"], {"x": 5}, "x (integer), or !decline:"),
    ],
    ids=["optional-left-empty", "optional-typed", "required"],
)
def test_a_field_of_a_type_or_null_is_asked_as_a_field_of_that_type(
    required, typed, content, asked
):
    """Other servers send an optional field as ``{"type": [T, "null"]}`` (not the spec's
    PrimitiveSchemaDefinition, which has one type): asked as a ``T``, optional unless the schema
    requires it (an answer holds no null: 2025-11-25 ElicitResult), checked as a ``T``."""
    schema = form("x", {"type": ["integer", "null"]})
    if not required:
        del schema["required"]
    answer, stderr = elicited(schema, typed)
    assert answer == {"result": {"action": "accept", "content": content}}
    assert asked in stderr


def test_our_own_servers_elicitation_of_an_optional_field_is_asked_and_answered():
    """``ctx.elicit(schema=<dataclass>)`` with ``Optional`` fields: 2025-11-25 client/elicitation
    §Requested Schema allows only primitive types (one ``type``, no ``"null"``), so each is sent
    as its type, not required; the command asks it as optional, and the tool gets None for it."""
    server = Path(__file__).parent.parent / "servers" / "elicit_optional_server.py"
    proc = cli("call", "--yes", "signup", "--", sys.executable, str(server), stdin="Ada\n\nada\n")
    assert proc.returncode == 0, proc.stderr
    assert "declined" not in proc.stderr
    assert (
        "age (integer) (optional)" in proc.stderr and "nickname (string) (optional)" in proc.stderr
    )
    assert proc.stdout.strip() == "accept Signup(name='Ada', age=None, nickname='ada')"
