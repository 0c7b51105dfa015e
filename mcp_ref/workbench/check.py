"""``mcp-ref check TARGET``: the official schema as a linter for server authors.

It connects (any transport), negotiates (``initialize``, or ``server/discover`` in the 2026-07-28
era), then exercises the server without side effects: ping (handshake era only); every page of tools, resources, templates and prompts; a bounded number of resource
reads and of prompts that need no arguments; an unknown method (-32601 expected), invalid
params (-32602), an invalid cursor (-32602 recommended).  With ``call_tools`` it also
calls each tool once with arguments built from its ``inputSchema``.  Every message both
ways goes through :class:`~mcp_ref.workbench.wire_check.WireValidator`, against the official schema
of the negotiated revision; what the server sends that is no message at all has a row named for
the transport (a line of stdout, an HTTP response body or SSE event), and over Streamable HTTP an
answer of a type the spec does not allow has one too (:class:`PostAnswers`, the HTTP observer).
Each finding has a status (pass, warn, fail) and the spec
section it rests on; the command prints them as a table (``--json``: a report object) and
exits 5 when anything failed.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import (
    INVALID_PARAMS,
    ConnectionClosed,
    McpError,
    MissingRequiredClientCapabilityError,
    RequestTimeout,
)
from ..http.exchange_trace import HttpRequestSeen, HttpResponseSeen, SseEventSeen

#: Resources read and prompts got at most (the rest are listed, not fetched).
MAX_READS = 20
#: Tools called at most with ``call_tools``.
MAX_CALLS = 50
#: Seconds one example tool call may take by default (then it is cancelled, and a warning says
#: so; ``--call-timeout``).
CALL_TIMEOUT = 5.0
#: Schema errors quoted in the report at most (all are counted).
MAX_QUOTED = 10
#: Characters of a Content-Type quoted at most.
CONTENT_TYPE_EXCERPT = 80

PASS, WARN, FAIL = "pass", "warn", "fail"
#: How the validator's error for a line that is not JSON begins (``WireValidator._not_a_message``).
NOT_A_MESSAGE = "not a JSON-RPC message (from the server): "
#: Answers of another type quoted at most (all are counted).
MAX_ODD_ANSWERS_QUOTED = 3
#: What carries the server's messages, by transport (:meth:`Checker.transport`): the check of the
#: row for what is not a message, what one such thing is called, and the spec section that rules
#: it out, in the handshake era and in the 2026-07-28 era.
NOT_MESSAGE_ROWS = {
    # 2025-11-25 basic/transports §stdio: "The server MUST NOT write anything to its stdout that is
    # not a valid MCP message" (the same sentence in 2026-07-28 basic/transports/stdio).
    "stdio": (
        "the server writes nothing but MCP messages to its stdout",
        "line(s)",
        "basic/transports §stdio",
        "basic/transports/stdio",
    ),
    # 2025-11-25 basic/transports §Sending Messages to the Server: the server answers a request
    # with "Content-Type: application/json, to return one JSON object", or an SSE stream whose
    # events carry messages (the same in 2026-07-28 basic/transports/streamable-http).
    "http": (
        "every response body and SSE event from the server is a JSON-RPC message",
        "response body(ies) or SSE event(s)",
        "basic/transports §Sending Messages to the Server",
        "basic/transports/streamable-http §Sending Messages",
    ),
    # 2024-11-05 basic/transports §HTTP with SSE: "Server messages are sent as SSE message events,
    # with the message content encoded as JSON in the event data" (the POSTs' replies carry none).
    "sse": (
        "every SSE event from the server is a JSON-RPC message",
        "SSE event(s)",
        "basic/transports §HTTP with SSE",
        "basic/transports §HTTP with SSE",
    ),
}
#: The revision that defines the HTTP+SSE transport (later ones point to it: 2025-11-25
#: basic/transports §Backwards Compatibility), whatever revision was negotiated over it.
LEGACY_REVISION = "2024-11-05"
#: The types a server may answer a POSTed request with (:class:`PostAnswers`).
ANSWER_TYPES = ("application/json", "text/event-stream")


@dataclass
class Finding:
    """One check's outcome: what was checked, pass / warn / fail, the spec section, and why."""

    check: str
    status: str
    section: str
    detail: str = ""


class Checker:
    """Runs the checks against a connected :class:`~mcp_ref.client.Client` and keeps the findings."""

    def __init__(
        self,
        client,
        validator,
        *,
        call_tools: bool = False,
        call_timeout: float = CALL_TIMEOUT,
        answers: PostAnswers | None = None,
    ):
        self.client = client
        self.validator = validator
        #: What the server answered the POSTs with (an HTTP target's ``http_trace``; None: none seen).
        self.answers = answers
        self.call_tools = call_tools
        #: Seconds each example tool call may take (``--call-timeout``).
        self.call_timeout = call_timeout
        self.findings: list[Finding] = []
        self.version = client.protocol_version

    def add(
        self, check: str, status: str, section: str, detail: str = "", revision: str | None = None
    ) -> None:
        """A finding; ``section`` is of ``revision``'s text (None: the negotiated revision's)."""
        self.findings.append(
            Finding(check, status, f"{revision or self.version} {section}", detail)
        )

    def attempt(self, check: str, section: str, action: Callable[[], str | None]) -> Any:
        """Run ``action``; it returns a detail (pass) or raises (fail, with the error as detail)."""
        try:
            detail = action()
        except (McpError, RequestTimeout, ConnectionClosed, ValueError, TypeError, KeyError) as exc:
            self.add(check, FAIL, section, f"{type(exc).__name__}: {exc}")
            return False
        self.add(check, PASS, section, detail or "")
        return True

    def run(self) -> list[Finding]:
        """Every check, in order; the schema verdict last (it covers every message exchanged)."""
        caps = self.client.server_capabilities
        info = self.client.server_info
        server = (
            f"server {info.name} {info.version}"
            if info is not None
            else "the server did not name itself"
        )
        if self.client.era == "modern":  # 2026-07-28: no handshake, no ping
            self.add(
                "server/discover: a protocol version both sides speak",
                PASS,
                "basic/versioning §Protocol Version Negotiation",
                f"chose {self.version}; {server}",
            )
            if info is None:
                self.add(
                    "results name the server",
                    WARN,
                    "basic/index §_meta",
                    "servers SHOULD include io.modelcontextprotocol/serverInfo in every result's _meta",
                )
        else:
            self.add(
                "initialize: a protocol version both sides speak",
                PASS,
                "basic/lifecycle §Version Negotiation",
                f"negotiated {self.version}; {server}",
            )
            self.attempt("ping answers an empty result", "basic/utilities/ping", self._ping)
        if "tools" in caps:
            self._tools()
        if "resources" in caps:
            self._resources()
        if "prompts" in caps:
            self._prompts()
        self._expect_error(
            "an unknown method is -32601",
            "basic §JSON-RPC (Method not found)",
            "mcp-ref/check-no-such-method",
            {},
            -32601,
        )
        self._invalid_params(caps)
        self._only_messages()
        self._answer_types()
        self._schema()
        return self.findings

    @property
    def transport(self) -> str:
        """What carries the conversation: ``"stdio"``, ``"http"`` (Streamable HTTP) or ``"sse"``
        (the 2024-11-05 HTTP+SSE transport a handshake fell back to, as :attr:`answers` saw)."""
        if getattr(self.client.session.transport, "http_hooks", None) is None:
            return "stdio"
        return "sse" if self.answers is not None and self.answers.legacy else "http"

    # -- the checks ------------------------------------------------------------------------

    def _ping(self) -> str | None:
        result = self.client.request("ping", None)
        if result != {}:
            raise ValueError(f"ping answered {result!r}, not an empty result")
        return None

    def _tools(self) -> None:
        tools: list = []

        def listing():
            tools.extend(self.client.list_tools())
            return f"{len(tools)} tool(s), every page"

        if not self.attempt(
            "tools/list (following every cursor)", "server/tools §Listing Tools", listing
        ):
            return
        odd = [t.name for t in tools if not re.fullmatch(r"[A-Za-z0-9_.\-]{1,128}", t.name or "")]
        if odd:
            self.add(
                "tool names follow the naming guidance",
                WARN,
                "server/tools §Tool Names",
                "names SHOULD be 1-128 of A-Z a-z 0-9 _ - .: " + ", ".join(map(repr, odd[:5])),
            )
        self._expect_error(
            "an invalid cursor is -32602",
            "server/utilities/pagination §Error Handling",
            "tools/list",
            {"cursor": "mcp-ref-check: not a cursor"},
            -32602,
            should=True,
        )
        if self.call_tools:
            for tool in tools[:MAX_CALLS]:
                self._call(tool)

    def _call(self, tool) -> None:
        check = f"tools/call {tool.name} with example arguments"
        unmatched = unexampled(tool.input_schema)
        if unmatched:
            self.add(check, WARN, "server/tools §Calling Tools", f"not called: {unmatched}")
            return
        try:
            arguments = example_arguments(tool.input_schema)
        except ExampleTooLarge as exc:
            self.add(check, WARN, "server/tools §Calling Tools", f"not called: {exc}")
            return
        shown = shown_arguments(arguments)
        try:
            result = self.client.call_tool(tool.name, arguments, timeout=self.call_timeout)
        except RequestTimeout:
            self.add(
                check,
                WARN,
                "server/tools §Calling Tools",
                f"no answer within {self.call_timeout:g} s with {shown}; cancelled (basic/utilities/cancellation)",
            )
            return
        except MissingRequiredClientCapabilityError as exc:
            # 2026-07-28: the right answer to this client
            self.add(
                check,
                WARN,
                "basic/index §Error Codes (-32021)",
                f"needs client capabilities this check does not declare: {exc.required_capabilities}",
            )
            return
        except McpError as exc:
            # 2025-06-18 server/tools §Error Handling lists "Invalid arguments" among the protocol
            # errors: a server may refuse arguments built from its schema alone (a rule the schema
            # does not state): the server is not at fault, the example is.
            status = WARN if exc.code == INVALID_PARAMS else FAIL
            detail = f"{type(exc).__name__}: {exc}"
            if status == WARN:
                detail = f"the example arguments were refused: {shown}: {exc}"
            self.add(check, status, "server/tools §Error Handling", detail)
            return
        except ConnectionClosed as exc:
            self.add(check, FAIL, "server/tools §Calling Tools", f"{type(exc).__name__}: {exc}")
            return
        if result.is_error:
            text = " ".join(getattr(b, "text", "") for b in result.content)[:200]
            self.add(
                check,
                WARN,
                "server/tools §Error Handling",
                f"the example arguments were refused (isError): {shown}: {text}",
            )
        elif tool.output_schema is not None and result.structured_content is None:
            self.add(
                check,
                FAIL,
                "server/tools §Output Schema",
                "the tool declares an outputSchema but sent no structuredContent (servers MUST)",
            )
        else:
            self.add(check, PASS, "server/tools §Calling Tools", f"arguments {shown}")

    def _resources(self) -> None:
        resources: list = []

        def listing():
            resources.extend(self.client.list_resources())
            return f"{len(resources)} resource(s), every page"

        self.attempt(
            "resources/list (following every cursor)",
            "server/resources §Listing Resources",
            listing,
        )
        self.attempt(
            "resources/templates/list (following every cursor)",
            "server/resources §Resource Templates",
            lambda: f"{len(self.client.list_resource_templates())} template(s)",
        )
        for resource in resources[:MAX_READS]:
            self.attempt(
                f"resources/read {resource.uri}",
                "server/resources §Reading Resources",
                functools.partial(self._read, resource.uri),
            )

    def _read(self, uri: str) -> str:
        contents = self.client.read_resource(uri).contents
        if not contents:
            raise ValueError("no contents")
        return f"{len(contents)} item(s)"

    def _prompts(self) -> None:
        prompts: list = []

        def listing():
            prompts.extend(self.client.list_prompts())
            return f"{len(prompts)} prompt(s), every page"

        self.attempt(
            "prompts/list (following every cursor)", "server/prompts §Listing Prompts", listing
        )
        simple = [p for p in prompts if not any(a.required for a in p.arguments or [])]
        for prompt in simple[:MAX_READS]:

            def get(name: str = prompt.name) -> str:
                return f"{len(self.client.get_prompt(name).messages)} message(s)"

            self.attempt(f"prompts/get {prompt.name}", "server/prompts §Getting a Prompt", get)

    def _invalid_params(self, caps: dict) -> None:
        for capability, method in (
            ("tools", "tools/call"),
            ("resources", "resources/read"),
            ("prompts", "prompts/get"),
        ):
            if capability in caps:
                self._expect_error(
                    f"{method} without its required params is -32602",
                    "basic §JSON-RPC (Invalid params)",
                    method,
                    {},
                    -32602,
                )
                return

    def _expect_error(
        self, check: str, section: str, method: str, params: dict, code: int, should: bool = False
    ) -> None:
        missed = WARN if should else FAIL  # the status when another answer comes
        try:
            self.client.request(method, params)
        except McpError as exc:
            if exc.code == code:
                self.add(check, PASS, section, f"{exc.code} {exc}")
            else:
                self.add(check, missed, section, f"answered {exc.code} {exc}, not {code}")
            return
        except (RequestTimeout, ConnectionClosed) as exc:
            self.add(check, FAIL, section, f"{type(exc).__name__}: {exc}")
            return
        self.add(check, missed, section, f"answered with a result, not error {code}")

    def _only_messages(self) -> None:
        # What carries the messages carries nothing else: a stdio server's stdout, a Streamable HTTP
        # server's response bodies and SSE events (NOT_MESSAGE_ROWS: the sentence of each).
        count = self.validator.not_messages.get("<--", 0)
        if count == 0:
            return  # the schema row says how many messages were checked
        transport = self.transport
        check, things, section, modern_section = NOT_MESSAGE_ROWS[transport]
        quoted = [e for e in self.validator.received_errors if e.startswith(NOT_A_MESSAGE)]
        more = count - len(quoted)
        self.add(
            check,
            FAIL,
            modern_section if self.client.era == "modern" else section,
            f"{count} {things} that are not a JSON-RPC message: "
            + "; ".join(e.removeprefix(NOT_A_MESSAGE) for e in quoted)
            + (f"; ... {more} more" if more > 0 else ""),
            LEGACY_REVISION if transport == "sse" else None,
        )

    def _answer_types(self) -> None:
        # 2025-11-25 basic/transports §Sending Messages to the Server: "If the input is a JSON-RPC
        # request, the server MUST either return Content-Type: text/event-stream, to initiate an SSE
        # stream, or Content-Type: application/json, to return one JSON object" (2026-07-28
        # basic/transports/streamable-http §Sending Messages: the same).  The 2024-11-05 transport's
        # POSTs answer nothing: their replies may be of any type.
        if self.answers is None or self.transport != "http" or not self.answers.odd:
            return  # shown only when it fails, as the row for what is not a message
        odd = list(self.answers.odd)
        quoted = "; ".join(
            f"{content_type!r} (to {method})" if content_type else f"no Content-Type (to {method})"
            for method, content_type in odd[:MAX_ODD_ANSWERS_QUOTED]
        )
        more = len(odd) - MAX_ODD_ANSWERS_QUOTED
        self.add(
            "the server answers each request with application/json or text/event-stream",
            FAIL,
            "basic/transports/streamable-http §Sending Messages"
            if self.client.era == "modern"
            else "basic/transports §Sending Messages to the Server",
            f"{len(odd)} answer(s) of another type: {quoted}"
            + (f"; ... {more} more" if more > 0 else ""),
        )

    def _schema(self) -> None:
        # The server's messages: this command's own probes are invalid on purpose.  Lines that are
        # not messages have a row of their own (_only_messages).
        errors = [e for e in self.validator.received_errors if not e.startswith(NOT_A_MESSAGE)]
        section = "schema.json (the official JSON Schema)"
        detail = f"{len(self.validator.messages)} message(s) checked"
        if errors:
            detail = "; ".join(errors[:MAX_QUOTED]) + (
                f"; ... {len(errors) - MAX_QUOTED} more" if len(errors) > MAX_QUOTED else ""
            )
        check = f"every message from the server matches the {self.version} schema"
        self.add(check, FAIL if errors else PASS, section, detail)


class PostAnswers:
    """An ``http_trace`` observer (``Client.http(http_trace=...)``): the answers to POSTed requests
    whose Content-Type is neither of :data:`ANSWER_TYPES` (:meth:`Checker._answer_types`).

    The transport fails such a request without reading its answer (``HttpClientTransport._deliver``),
    so no message reaches the ``trace`` hook; the HTTP exchange shows it.  An HTTP error (4xx, 5xx)
    may carry any body, and a 202 answers nothing: neither counts.  Nor does the reply to a POST of
    the 2024-11-05 HTTP+SSE transport, whose answers come on its stream: :attr:`legacy` says when
    that transport carries the conversation (its ``endpoint`` event came).
    """

    def __init__(self) -> None:
        self._methods: dict[int, str] = {}  # exchange -> the method of the request it POSTed
        #: ``(method, Content-Type as sent, "" when none)`` of each answer of another type.
        self.odd: list[tuple[str, str]] = []
        #: True once an ``endpoint`` event came: the 2024-11-05 HTTP+SSE transport carries the rest.
        self.legacy = False
        self._lock = threading.Lock()

    def __call__(self, seen: Any) -> None:
        if isinstance(seen, HttpRequestSeen) and seen.method == "POST":
            method = _request_method(seen.body)
            if method is not None:
                with self._lock:
                    self._methods[seen.exchange] = method
        elif isinstance(seen, HttpResponseSeen):
            with self._lock:
                method = self._methods.pop(seen.exchange, None)
            if method is None or not 200 <= seen.status < 300 or seen.status == 202:
                return
            content_type = next((v for k, v in seen.headers if k.lower() == "content-type"), "")
            if content_type.split(";")[0].strip().lower() not in ANSWER_TYPES:
                with self._lock:
                    self.odd.append((method, content_type[:CONTENT_TYPE_EXCERPT]))
        elif isinstance(seen, SseEventSeen) and seen.event == "endpoint":
            self.legacy = True


def _request_method(body: bytes | None) -> str | None:
    """The method of the JSON-RPC request a POST's ``body`` holds (None: no request, a batch)."""
    try:
        message = json.loads(body or b"")
    except ValueError:
        return None
    if isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str):
        return message["method"]
    return None


#: Example values for the string formats an example can meet (JSON Schema 2020-12 §7.3).
FORMAT_EXAMPLES = {
    "email": "user@example.com",
    "uri": "https://example.com/",
    "date": "2025-01-01",
    "date-time": "2025-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
#: The longest example string, and the most items of an example array (a schema's minLength or
#: minItems past them is not honoured: the server may refuse the example, a warning).
MAX_EXAMPLE_LENGTH = 1024
MAX_EXAMPLE_ITEMS = 16
#: The whole example's budget, across every level of nesting: so many values (each array item,
#: property and scalar) and so many characters.  Nested arrays multiply (16 items of 16 items of
#: ...): a small schema past it is not called, a warning.
MAX_EXAMPLE_VALUES = 1000
MAX_EXAMPLE_CHARACTERS = 64 * 1024
#: The most characters of an example shown in a finding (its JSON, cut).
SHOWN_ARGUMENTS = 200


class ExampleTooLarge(ValueError):
    """The example arguments a schema asks for would pass the budget of one example."""


class _Budget:
    """What is left of one example's budget of values and characters."""

    def __init__(self) -> None:
        self.values = MAX_EXAMPLE_VALUES
        self.characters = MAX_EXAMPLE_CHARACTERS

    def spend(self, values: int, characters: int) -> None:
        """Take ``values`` and ``characters``; ExampleTooLarge when the budget is spent."""
        self.values -= values
        self.characters -= characters
        if self.values < 0 or self.characters < 0:
            raise ExampleTooLarge(
                f"the example arguments would pass {MAX_EXAMPLE_VALUES:,} values"
                f" or {MAX_EXAMPLE_CHARACTERS // 1024} KiB"
            )

    def charged(self, value: Any) -> Any:
        """``value``, a whole value the example takes as it is, paid for as one value and its
        JSON's characters.  ExampleTooLarge for a number JSON cannot write here: one step past an
        exclusive bound of 4,300 digits (a JSON number the server may send) has more digits than
        Python turns into text (``sys.get_int_max_str_digits``), and every number the bound
        allows has as many."""
        try:
            text = json.dumps(value)
        except ValueError:
            raise ExampleTooLarge(
                "an example number would have more digits than Python writes as text"
                " (sys.get_int_max_str_digits)"
            ) from None
        self.spend(1, len(text))
        return value


def shown_arguments(arguments: dict) -> str:
    """``arguments`` as a finding shows them: their JSON (every character escaped that is not
    ASCII), cut to :data:`SHOWN_ARGUMENTS` characters."""
    text = json.dumps(arguments)
    return text if len(text) <= SHOWN_ARGUMENTS else text[:SHOWN_ARGUMENTS] + "..."


def unexampled(schema: Any) -> str | None:
    """Why no example can be made for ``schema`` (an ``inputSchema``), or None: a required string
    with a ``pattern`` (never run here: a server's regular expression can take exponential time)
    or a ``format`` with no example in :data:`FORMAT_EXAMPLES`."""
    properties, required = _object_parts(schema)
    for name in required:
        prop = properties.get(name)
        if not isinstance(prop, dict) or prop.get("type") != "string":
            continue
        if "enum" in prop or "const" in prop or "default" in prop:
            continue
        if "pattern" in prop:
            return f"the required argument {name!r} must match a pattern"
        if "format" in prop and prop["format"] not in FORMAT_EXAMPLES:
            return f"the required argument {name!r} has the format {str(prop['format'])[:40]!r}"
    return None


def _object_parts(schema: Any) -> tuple[dict, list]:
    """An object schema's ``properties`` and ``required`` names, each empty when malformed."""
    if not isinstance(schema, dict):
        return {}, []
    properties = schema.get("properties")
    required = schema.get("required")
    properties = properties if isinstance(properties, dict) else {}
    required = (
        [name for name in required if isinstance(name, str)] if isinstance(required, list) else []
    )
    return properties, required


def example_arguments(schema: Any, depth: int = 0, budget: _Budget | None = None) -> dict:
    """Arguments that satisfy ``schema`` (an ``inputSchema``): each required property, simply
    filled.  ExampleTooLarge when they would pass the budget of one example (``budget``: what is
    left of it, shared by every level of nesting; ``depth``: how deep this object is)."""
    budget = _Budget() if budget is None else budget
    properties, required = _object_parts(schema)
    arguments = {}
    for name in required:
        if name in properties:
            budget.spend(1, len(json.dumps(name)))
            arguments[name] = example_value(properties[name], depth, budget)
    return arguments


def example_value(prop: Any, depth: int = 0, budget: _Budget | None = None) -> Any:
    """A value for one property schema: its default, its first enum or const value, else a plain
    one of its type within its bounds (minimum, maximum and their exclusive forms; minLength,
    maxLength and a known format; minItems).  Past five levels of nesting, a plain string;
    ExampleTooLarge past the budget (see :func:`example_arguments`)."""
    budget = _Budget() if budget is None else budget
    if not isinstance(prop, dict) or depth > 5:
        return budget.charged("example")
    for key in ("default", "const"):
        if key in prop:
            return budget.charged(prop[key])
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return budget.charged(prop["enum"][0])
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list) and prop[key]:
            return example_value(prop[key][0], depth + 1, budget)
    kind = prop.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        budget.spend(1, 2)
        return example_arguments(prop, depth + 1, budget)
    if kind == "array":
        return _example_array(prop, depth, budget)
    if kind in ("integer", "number"):
        return budget.charged(example_number(prop, integer=kind == "integer"))
    if kind == "boolean":
        return budget.charged(True)
    if kind == "null":
        return budget.charged(None)
    if prop.get("format") in FORMAT_EXAMPLES:
        return budget.charged(FORMAT_EXAMPLES[prop["format"]])
    shortest = schema_number(prop, "minLength")
    longest = schema_number(prop, "maxLength")
    length = max(int(shortest), 1) if shortest is not None else 1
    if longest is not None:
        length = min(length, int(longest))
    return budget.charged("x" * min(length, MAX_EXAMPLE_LENGTH))


def _example_array(prop: dict, depth: int, budget: _Budget) -> list:
    """An array of ``minItems`` (at most :data:`MAX_EXAMPLE_ITEMS`) copies of one example item,
    each copy paid for: what the first cost, again for every other."""
    items = prop.get("items")
    count = schema_number(prop, "minItems")
    count = min(int(count), MAX_EXAMPLE_ITEMS) if count is not None else 0
    budget.spend(1, 2)
    if not isinstance(items, dict) or count < 1:
        return []
    values, characters = budget.values, budget.characters
    item = example_value(items, depth + 1, budget)
    budget.spend(
        (count - 1) * (values - budget.values), (count - 1) * (characters - budget.characters + 1)
    )
    return [item] * count


def example_number(prop: dict, integer: bool) -> int | float:
    """A number within ``prop``'s minimum, maximum, exclusiveMinimum and exclusiveMaximum
    (JSON Schema 2020-12 §6.2): 1 when it fits, else the first of the bounds (or one step inside
    an exclusive one, or the middle of the two) that does; else 1, which the server may refuse."""
    low, high = schema_number(prop, "minimum"), schema_number(prop, "maximum")
    above, below = schema_number(prop, "exclusiveMinimum"), schema_number(prop, "exclusiveMaximum")

    def allowed(value: float) -> bool:
        return (
            (low is None or value >= low)
            and (high is None or value <= high)
            and (above is None or value > above)
            and (below is None or value < below)
            and (not integer or value == int(value))
        )

    lowers = [bound for bound in (low, above) if bound is not None]
    uppers = [bound for bound in (high, below) if bound is not None]
    candidates = [1, *lowers, *uppers, *(b + 1 for b in lowers), *(b - 1 for b in uppers)]
    candidates += [math.floor(b) + 1 for b in lowers] + [math.ceil(b) - 1 for b in uppers]
    if lowers and uppers:
        middle = _middle(max(lowers), min(uppers))
        candidates += [middle, math.floor(middle), math.ceil(middle)]
    value = next((candidate for candidate in candidates if allowed(candidate)), 1)
    if integer:
        return int(value)
    try:
        return float(value)
    except OverflowError:  # an integer beyond every float: sent as it is, still a JSON number
        return value


def _middle(low: int | float, high: int | float) -> int | float:
    """Halfway from ``low`` to ``high``; in whole numbers when a bound is an integer beyond every
    float (Python's float arithmetic cannot take it; its comparisons can)."""
    try:
        return (low + high) / 2
    except OverflowError:
        return (math.floor(low) + math.ceil(high)) // 2


def schema_number(prop: dict, key: str) -> int | float | None:
    """A numeric keyword of ``prop`` (a JSON Schema: minimum, maxLength, ...) when it is a finite
    number (not a boolean), else None.  An integer is always finite and is kept exact, however
    large (a JSON number may have any digits, RFC 8259 §6): ``math.isfinite`` cannot take one
    beyond every float, and Python compares it with a typed int or float exactly."""
    value = prop.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def report(findings: list[Finding]) -> dict:
    """The machine-readable report: counts, and every finding."""
    counts = {status: sum(f.status == status for f in findings) for status in (PASS, WARN, FAIL)}
    return {"ok": counts[FAIL] == 0, "counts": counts, "findings": [asdict(f) for f in findings]}


def table(findings: list[Finding]) -> str:
    """The findings as a plain-text table: status, check, section, detail."""
    rows = [(f.status.upper(), f.check, f.section, f.detail.replace("\n", " ")) for f in findings]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    lines = [
        f"{status:<{widths[0]}}  {check:<{widths[1]}}  {section}"
        + (f"\n{'':<{widths[0]}}  {'':<{widths[1]}}  {detail}" if detail else "")
        for status, check, section, detail in rows
    ]
    counts = report(findings)["counts"]
    lines.append(f"\n{counts[PASS]} passed, {counts[WARN]} warning(s), {counts[FAIL]} failed")
    return "\n".join(lines)
