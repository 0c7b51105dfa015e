"""``Client(approve=hook, server_request_limit=...)``: what a server asks of the client passes the
client's rate limit and its approval hook first (mcp_ref/extensions/approval.py).

Run for real: the server (tests/servers/approval_server.py, and tests/servers/tasks_server.py for
a task's asks) as a subprocess over stdio, or served over HTTP on 127.0.0.1 (port 0); in both
eras — the handshake era (the server sends requests) and 2026-07-28 (``inputRequests`` of an
``input_required`` result, or of a task).  Time is a fake clock the tests advance, never a sleep.
"""

from __future__ import annotations

import json
import logging
import threading

import pytest
from conftest import WAIT, InMemory, Workers, client_over
from http_fixtures import serve  # noqa: F401 - fixture

from mcp_ref import Extension, LimitExceeded, ServerRequest
from mcp_ref.client import RequestRefused
from mcp_ref.sampling_and_elicitation import CreateMessageResult, ElicitResult
from mcp_ref.types import TextContent

APPROVAL = InMemory("approval_server")
TASKS = InMemory("tasks_server")
ROOT = "file:///tmp/approval-root"
NAME = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Name"}},
    "required": ["name"],
}
SAMPLING, ELICITATION, ROOTS = "sampling/createMessage", "elicitation/create", "roots/list"
KINDS_AND_ERAS = [
    pytest.param(kind, era, id=f"{kind}-{era}")
    for kind in ("stdio", "http")
    for era in ("handshake", "modern")
]


class Handlers:
    """The client's sampling and elicitation handlers, recording what they were asked."""

    def __init__(self):
        self.sampled: list = []
        self.elicited: list = []

    def sample(self, params) -> CreateMessageResult:
        self.sampled.append(params)
        return CreateMessageResult(
            role="assistant",
            model="test-model",
            content=TextContent(
                text=f"model saw: {params.messages[0].content.text} (max {params.max_tokens})"
            ),
        )

    def elicit(self, params) -> ElicitResult:
        self.elicited.append(params)
        properties = (params.requested_schema or {}).get("properties", {})
        content = {
            key: True if spec.get("type") == "boolean" else "Ada"
            for key, spec in properties.items()
        }
        return ElicitResult(action="accept", content=content)


@pytest.fixture
def handlers():
    return Handlers()


@pytest.fixture
def client(serve, wire, handlers):
    """Factory: ``client(kind, era, server=APPROVAL, **options)`` -> a Client with the handlers and a
    root, every message schema-checked (``wire``); closed after the test."""
    clients = []

    def factory(kind: str, era: str, server: InMemory = APPROVAL, **options):
        options.setdefault("sampling_handler", handlers.sample)
        options.setdefault("elicitation_handler", handlers.elicit)
        options.setdefault("roots", [ROOT])
        made = client_over(kind, server, serve, trace=wire, era=era, **options)
        clients.append(made)
        assert made.era == era
        return made

    yield factory
    for made in clients:
        made.close()


def tool(client, name: str, **arguments) -> dict:
    """Call a tool of approval_server.py and read the JSON it reports."""
    result = client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


class Recorder:
    """An ``approve`` hook that records each ServerRequest and answers ``verdict(request)``."""

    def __init__(self, verdict=lambda request: True):
        self.verdict = verdict
        self.seen: list[ServerRequest] = []

    def __call__(self, request: ServerRequest):
        self.seen.append(request)
        return self.verdict(request)

    def methods(self) -> list[str]:
        return [request.method for request in self.seen]


# -- the hook sees every request ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind, era", KINDS_AND_ERAS)
def test_the_hook_sees_each_request_with_its_params(kind, era, client, handlers):
    def approve(request: ServerRequest):
        if request.method == SAMPLING:
            request.params["maxTokens"] = 1  # the hook's copy: changing it in place changes nothing
        return True

    hook = Recorder(approve)
    c = client(kind, era, approve=hook)
    assert tool(c, "sample", text="hello there")["text"] == "model saw: hello there (max 32)"
    assert tool(c, "ask") == {"action": "accept", "content": {"name": "Ada"}}
    assert tool(c, "roots") == {"roots": [ROOT]}

    assert hook.methods() == [SAMPLING, ELICITATION, ROOTS]
    assert {request.era for request in hook.seen} == {era}
    sampling, elicitation, roots = (request.params for request in hook.seen)
    assert sampling["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "hello there"}}
    ]
    assert (
        sampling["systemPrompt"] == "Be brief." and sampling["maxTokens"] == 1
    )  # (its own change)
    assert elicitation["message"] == "Who are you?" and elicitation["requestedSchema"] == NAME
    assert {k: v for k, v in roots.items() if k != "_meta"} == {}
    assert [p.max_tokens for p in handlers.sampled] == [32]


@pytest.mark.slow
@pytest.mark.parametrize("kind, era", KINDS_AND_ERAS)
def test_refusals_are_answered_as_the_spec_says(kind, era, client, handlers, wire):
    hook = Recorder(lambda request: False)
    c = client(kind, era, approve=hook)

    # Elicitation: declined, and the server sees the decline (handshake: the answer to its request;
    # 2026-07-28: the retry's inputResponses).
    assert tool(c, "ask") == {"action": "decline", "content": None}
    if era == "handshake":
        assert {
            "jsonrpc": "2.0",
            "id": wire.received(ELICITATION)[0]["id"],
            "result": {"action": "decline"},
        } in wire.sent()
    else:
        retry = [m for m in wire.sent("tools/call") if "inputResponses" in m["params"]]
        assert [m["params"]["inputResponses"] for m in retry] == [{"ask": {"action": "decline"}}]

    # Sampling and roots: error -1 (handshake: the server's tool sees it; 2026-07-28: the caller's
    # request fails with it, and no retry is sent).
    for name, arguments, message in (
        ("sample", {"text": "hi"}, "User rejected sampling request"),
        ("roots", {}, "The user refused to share roots"),
    ):
        if era == "handshake":
            assert tool(c, name, **arguments) == {
                "error": {"code": -1, "message": message, "data": None}
            }
        else:
            sent = len(wire.sent("tools/call"))
            with pytest.raises(RequestRefused) as caught:
                c.call_tool(name, arguments)
            assert caught.value.code == -1 and message in caught.value.message
            assert len(wire.sent("tools/call")) == sent + 1  # the first round only: no retry
    assert hook.methods() == [ELICITATION, SAMPLING, ROOTS]
    assert (
        handlers.sampled == [] and handlers.elicited == []
    )  # a refused request never reaches its handler


# -- editing a request ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind, era", [("http", "handshake"), ("stdio", "modern")])
def test_an_edited_sampling_request_is_what_the_handler_answers(kind, era, client, handlers):
    edited = [{"role": "user", "content": {"type": "text", "text": "a gentler question"}}]
    hook = Recorder(
        lambda request: request.replace(messages=edited, maxTokens=8, systemPrompt=None)
    )
    c = client(kind, era, approve=hook)
    assert (
        tool(c, "sample", text="an unkind question")["text"]
        == "model saw: a gentler question (max 8)"
    )
    [params] = handlers.sampled
    assert params.system_prompt is None and params.max_tokens == 8
    assert (
        hook.seen[0].params["messages"][0]["content"]["text"] == "an unkind question"
    )  # what the server asked


@pytest.mark.slow
def test_a_hook_may_return_new_params_and_take_the_context(client, handlers):
    seen_contexts = []

    def approve(request, context):  # two arguments: the request's context too
        seen_contexts.append(context)
        if request.method == ELICITATION:
            return {**request.params, "message": "Who are you, please?"}  # a dict: the new params
        return True

    c = client("stdio", "handshake", approve=approve)
    assert tool(c, "ask") == {"action": "accept", "content": {"name": "Ada"}}
    assert [p.message for p in handlers.elicited] == ["Who are you, please?"]
    assert seen_contexts[0].method == ELICITATION and not seen_contexts[0].is_cancelled


class Outcome(Extension):
    """A client extension, given first (outermost): how each sampling request of the server's
    ended, the name of what it raised or ``"answered"`` (``outcomes``); ``ended`` is set each time."""

    def __init__(self):
        self.outcomes: list[str] = []
        self.ended = threading.Event()

    def intercept_request(self, call, proceed):
        if call.method != "sampling/createMessage":  # the one request watched
            return proceed()
        try:
            result = proceed()
        except BaseException as exc:
            self.outcomes.append(type(exc).__name__)
            raise
        finally:
            self.ended.set()
        self.outcomes.append("answered")
        return result


@pytest.mark.slow
def test_a_request_the_server_cancels_while_the_hook_runs_never_reaches_the_handler(
    client, handlers
):
    # 2025-11-25 basic/utilities/cancellation: receivers SHOULD "Stop processing the cancelled
    # request".  The server gives up after half a second; the person approves after that.
    saw_cancellation = []

    def approve(request, context):
        saw_cancellation.append(context.cancelled.wait(WAIT))
        return True

    outcome = Outcome()
    c = client("stdio", "handshake", approve=approve, extensions=[outcome])
    assert tool(c, "sample_briefly", text="hi") == {"timedOut": True}
    assert outcome.ended.wait(WAIT)
    assert saw_cancellation == [True]
    assert outcome.outcomes == ["RequestCancelled"]  # ended as cancelled: no answer was sent
    assert handlers.sampled == []  # the model was never sampled


@pytest.mark.slow
def test_edited_params_still_pass_the_handlers_checks(client, handlers):
    c = client("stdio", "handshake", approve=lambda request: request.replace(messages="not a list"))
    answer = tool(c, "sample", text="hi")
    assert answer["error"]["code"] == -32602 and "messages array" in answer["error"]["message"]
    assert handlers.sampled == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "verdict",
    [
        pytest.param(lambda request: None, id="None"),
        pytest.param(lambda request: "yes", id="a string"),
        pytest.param(
            lambda request: ServerRequest(SAMPLING, {"messages": [], "maxTokens": 1}),
            id="another method",
        ),
    ],
)
def test_a_hook_answering_anything_else_refuses(verdict, client, caplog):
    c = client("stdio", "handshake", approve=verdict)
    with caplog.at_level(logging.ERROR, logger="mcp_ref.extensions.approval"):
        assert tool(c, "roots") == {
            "error": {"code": -1, "message": "The user refused to share roots", "data": None}
        }
    assert any(
        record.levelno == logging.ERROR and ROOTS in record.getMessage()
        for record in caplog.records
    )


# -- a hook that raises ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind, era", [("stdio", "handshake"), ("http", "modern")])
def test_a_hook_that_raises_refuses_without_leaking(kind, era, client, handlers, wire, caplog):
    def explode(request):
        raise RuntimeError("hook exploded: private detail")

    c = client(kind, era, approve=explode)
    with caplog.at_level(logging.ERROR, logger="mcp_ref.extensions.approval"):
        assert tool(c, "ask") == {"action": "decline", "content": None}
        if era == "handshake":
            assert tool(c, "sample", text="hi")["error"] == {
                "code": -1,
                "message": "User rejected sampling request",
                "data": None,
            }
        else:
            with pytest.raises(RequestRefused, match="User rejected sampling request"):
                c.call_tool("sample", {"text": "hi"})
    failures = [record for record in caplog.records if record.exc_info]
    assert [record.exc_info[0] for record in failures] == [
        RuntimeError,
        RuntimeError,
    ]  # logged, with the traceback
    assert ELICITATION in failures[0].getMessage() and SAMPLING in failures[1].getMessage()
    sent = json.dumps([message for direction, message in wire.messages if direction == "-->"])
    assert "private detail" not in sent and "Traceback" not in sent and "RuntimeError" not in sent
    assert handlers.sampled == [] and handlers.elicited == []


# -- a task's asks --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_hook_sees_a_tasks_input_requests(client, handlers):
    hook = Recorder(lambda request: False)
    c = client("stdio", "modern", server=TASKS, approve=hook)
    assert (
        c.call_tool("confirm", {"filename": "a.txt"}, task=True).content[0].text == "kept a.txt"
    )  # declined
    assert hook.methods() == [ELICITATION] and hook.seen[0].params["message"] == "Delete a.txt?"
    assert hook.seen[0].era == "modern" and handlers.elicited == []

    hook.verdict = lambda request: True
    result = c.call_tool("confirm", {"filename": "b.txt"}, task=True)
    assert result.content[0].text == "Ada deleted b.txt (True)"
    assert [r.params["message"] for r in hook.seen[1:]] == ["Delete b.txt?", "Your name?", "Sure?"]


# -- the rate limit -------------------------------------------------------------------------------------


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.slow
@pytest.mark.parametrize("kind, era", KINDS_AND_ERAS)
def test_the_limit_holds_under_concurrent_callers_and_resets_after_its_window(
    kind, era, client, caplog
):
    hook = Recorder()
    c = client(kind, era, approve=hook, server_request_limit="3/minute")
    clock = c.server_request_limiter.clock = FakeClock()

    def one_call(i: int) -> dict:
        try:
            return tool(c, "roots")
        except (
            LimitExceeded
        ) as exc:  # 2026-07-28: the caller's request fails with the client's refusal
            assert era == "modern"
            return {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}

    def burst() -> tuple[list, list]:
        results = Workers(one_call, 8).start().join(WAIT)
        admitted = [r for r in results if "roots" in r]
        refused = [r["error"] for r in results if "error" in r]
        assert len(admitted) + len(refused) == 8, results
        return admitted, refused

    with caplog.at_level(logging.WARNING, logger="mcp_ref.extensions.approval"):
        admitted, refused = burst()
        assert (
            len(admitted) == 3 and len(hook.seen) == 3
        )  # exactly the limit; the hook sees only those
        assert {e["code"] for e in refused} == {-31005} and len(refused) == 5
        assert {e["data"]["limit"] for e in refused} == {"3/60s"}
        assert all(e["data"]["retryAfter"] > 0 for e in refused)

        clock.now += 60.0  # one window later: the bucket is full again, and only full
        admitted, refused = burst()
        assert len(admitted) == 3 and len(refused) == 5 and len(hook.seen) == 6
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 10 and all(ROOTS in w and "3/60s" in w for w in warnings)


@pytest.mark.slow
def test_the_limit_is_logged_with_the_method_and_limit_never_the_params(client, handlers, caplog):
    c = client("stdio", "handshake", server_request_limit="1/minute")
    c.server_request_limiter.clock = FakeClock()
    with caplog.at_level(logging.DEBUG, logger="mcp_ref.client"):
        assert (
            tool(c, "sample", text="my secret words")["text"]
            == "model saw: my secret words (max 32)"
        )
        error = tool(c, "sample", text="my secret words")["error"]
    assert error["code"] == -31005 and error["data"]["limit"] == "1/60s"
    assert error["message"].startswith(
        "Rate limit exceeded: server requests to this client allows 1 per 60 s"
    )
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert SAMPLING in warning.getMessage() and "1/60s" in warning.getMessage()
    assert "secret" not in caplog.text
    assert len(handlers.sampled) == 1


def test_the_three_methods_share_one_bucket(client):
    c = client("http", "modern", server_request_limit=(2, 60))
    c.server_request_limiter.clock = FakeClock()
    assert tool(c, "ask")["action"] == "accept"
    assert tool(c, "roots") == {"roots": [ROOT]}
    with pytest.raises(LimitExceeded) as caught:
        c.call_tool("sample", {"text": "hi"})
    assert caught.value.code == -31005 and caught.value.retry_after == 30.0


@pytest.mark.slow
def test_bad_options_are_refused_before_connecting():
    import sys

    from conftest import SERVERS

    from mcp_ref import Client

    command = [sys.executable, str(SERVERS / "approval_server.py")]
    with pytest.raises(ValueError, match="not a rate limit"):
        Client.stdio(command, server_request_limit="ten a minute", stderr="discard", timeout=WAIT)
    with pytest.raises(TypeError, match="approve must be a callable"):
        Client.stdio(command, approve=True, stderr="discard", timeout=WAIT)


@pytest.mark.slow
def test_a_task_whose_input_is_refused_is_cancelled_not_left_waiting(client, handlers):
    hook = Recorder(lambda request: True)
    c = client("stdio", "modern", server=TASKS, approve=hook, server_request_limit="1/minute")
    call = c.start_tool_call("confirm", {"filename": "c.txt"}, task=True)
    with pytest.raises(LimitExceeded):
        call.result()  # the first ask is answered; the second round's two are over the limit
    assert call.task_id is not None
    assert (
        c.get_task(call.task_id)["status"] == "cancelled"
    )  # not parked in input_required until its ttl


def test_a_task_whose_elicitation_handler_answers_wrongly_is_cancelled(client):
    # A handler's answer that is no ElicitResult the spec allows raises here; the task could only
    # wait in input_required until its ttl, holding one of the server's workers: it is cancelled.
    c = client(
        "stdio",
        "modern",
        server=TASKS,
        elicitation_handler=lambda params, context: {"action": "ACCEPT"},
    )
    call = c.start_tool_call("confirm", {"filename": "c.txt"}, task=True)
    with pytest.raises(ValueError, match="its action is 'ACCEPT'"):
        call.result()
    assert call.task_id is not None
    assert c.get_task(call.task_id)["status"] == "cancelled"
