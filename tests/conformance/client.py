"""The conformance client: what the official MCP conformance suite's client scenarios expect a client to do.

The suite runs ``python tests/conformance/client.py URL`` with the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` (and the revision in ``MCP_CONFORMANCE_PROTOCOL_VERSION``, data in
``MCP_CONFORMANCE_CONTEXT`` for some scenarios).  Written with mcp_ref's ``Client.http`` from the
scenario descriptions of @modelcontextprotocol/conformance 0.2.0-alpha.12.

The ``auth/*`` scenarios run mcp_ref's OAuth client (``mcp_ref.OAuth``): the suite's authorization
servers approve at once, so ``follow_redirect`` plays the browser; the credentials and keys of the
extension scenarios come in ``MCP_CONFORMANCE_CONTEXT``.

Exit status: 0 when the scenario's steps ran, 1 when a step failed, 2 for a scenario this client
does not implement.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parents[2])
)  # run from a checkout without installing

from mcp_ref import (
    MODERN_VERSIONS,
    AuthorizationError,
    Client,
    ElicitResult,
    McpError,
    OAuth,
    lifecycle,
)
from mcp_ref.oauth.errors import CallbackError, InsufficientScope, MetadataError

SCENARIOS: dict[str, Callable[[str], None]] = {}
CLOSE_TIMEOUT = 10.0


def scenario(name: str):
    def register(func):
        SCENARIOS[name] = func
        return func

    return register


def connect(url: str, **options) -> Client:
    """An initialized client at the revision the suite asks for (when mcp_ref speaks it)."""
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    if version in lifecycle.SUPPORTED_VERSIONS or version in MODERN_VERSIONS:
        options.setdefault("protocol_version", version)  # a 2026-07-28 revision pins the modern era
    options.setdefault("name", "mcp-ref-conformance-client")
    options.setdefault("timeout", 20)
    if os.environ.get(
        "MCP_CONFORMANCE_TRACE"
    ):  # every JSON-RPC message on stderr (the suite keeps it)
        options.setdefault(
            "trace",
            lambda direction, data: print(
                direction, data.decode(errors="replace").strip(), file=sys.stderr, flush=True
            ),
        )
    return Client.http(url, **options)


class CloseHung(Exception):
    """Client.close() did not return in time."""


@contextlib.contextmanager
def session(url: str, **options):
    """``connect()`` for a ``with`` block whose close is bounded: a close() that hangs is reported as a failure."""
    client = connect(url, **options)
    try:
        yield client
    except BaseException:
        if not close_within(client, CLOSE_TIMEOUT):  # keep the first failure; mention this one
            print(
                f"client.py: Client.close() did not return within {CLOSE_TIMEOUT:.0f} s either",
                file=sys.stderr,
            )
        raise
    if not close_within(client, CLOSE_TIMEOUT):
        raise CloseHung(f"Client.close() did not return within {CLOSE_TIMEOUT:.0f} s")


def close_within(client: Client, timeout: float) -> bool:
    closer = threading.Thread(target=client.close, name="close", daemon=True)
    closer.start()
    closer.join(timeout)
    return not closer.is_alive()


def find_tool(client: Client, name: str):
    for tool in client.list_tools():
        if tool.name == name:
            return tool
    raise SystemExit(f"the server lists no tool named {name!r}")


@scenario("initialize")
def initialize(url: str) -> None:
    """Initialize (initialize, then notifications/initialized) and close: the server declares no capabilities."""
    with session(url) as client:
        client.ping()


@scenario("tools_call")
def tools_call(url: str) -> None:
    """List the tools and call add_numbers with two numbers."""
    with session(url) as client:
        find_tool(client, "add_numbers")
        result = client.call_tool("add_numbers", {"a": 5, "b": 3})
        if result.is_error:
            raise SystemExit(f"add_numbers failed: {result.text}")


@scenario("elicitation-sep1034-client-defaults")
def elicitation_defaults(url: str) -> None:
    """Accept the server's elicitation leaving every field empty: the client fills in the schema's defaults (SEP-1034)."""

    def accept_with_defaults(params):
        return ElicitResult(action="accept", content={})

    with session(url, elicitation_handler=accept_with_defaults) as client:
        find_tool(client, "test_client_elicitation_defaults")
        client.call_tool("test_client_elicitation_defaults", {})


@scenario("sse-retry")
def sse_retry(url: str) -> None:
    """Call test_reconnection: the server closes the SSE stream mid-call; the client must reconnect (GET,
    Last-Event-ID) after the announced retry delay and get the result there (SEP-1699)."""
    with session(url) as client:
        find_tool(client, "test_reconnection")
        result = client.call_tool("test_reconnection", {})
        if result.is_error:
            raise SystemExit(f"test_reconnection failed: {result.text}")


@scenario("json-schema-2020-12-preservation")
def json_schema_preservation(url: str) -> None:
    """Echo json_schema_2020_12_tool's inputSchema, exactly as received, through json_schema_echo (SEP-1613, SEP-2106)."""
    with session(url) as client:
        tool = find_tool(client, "json_schema_2020_12_tool")
        schema = tool.input_schema
        find_tool(client, "json_schema_echo")
        client.call_tool("json_schema_echo", {"schema": schema})


@scenario("request-metadata")
def request_metadata(url: str) -> None:
    """The server refuses the first request with -32022 whatever it names: retry with a version from its
    ``supported`` list, every request carrying the envelope and the version header (SEP-2575)."""
    with session(url) as client:
        client.ping()  # server/discover again, at the version chosen


@scenario("sep-2322-client-request-state")
def request_state(url: str) -> None:
    """Call the four MRTR tools: answer input_required with the elicitation handler, retry with a new id,
    echo requestState exactly and only when one came, and never mix rounds across calls (SEP-2322)."""

    def confirm(params):
        return ElicitResult(action="accept", content={"confirmed": True})

    with session(url, elicitation_handler=confirm) as client:
        for tool in client.list_tools():
            result = client.call_tool(tool.name, {})
            if result.is_error:
                raise SystemExit(f"{tool.name} failed: {result.text}")


@scenario("http-standard-headers")
def standard_headers(url: str) -> None:
    """A call, a read and a prompt: each POST carries Mcp-Method, and Mcp-Name for those three (SEP-2243)."""
    with session(url) as client:
        tools = client.list_tools()
        client.call_tool(tools[0].name, {})
        resources = client.list_resources()
        client.read_resource(resources[0].uri)
        prompts = client.list_prompts()
        client.get_prompt(prompts[0].name)


@scenario("http-custom-headers")
def custom_headers(url: str) -> None:
    """Call the context's tools with its arguments: the x-mcp-header parameters travel as Mcp-Param-* headers."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with session(url) as client:
        client.list_tools()
        for call in context.get("toolCalls", []):
            client.call_tool(call["name"], call.get("arguments") or {})


@scenario("http-invalid-tool-headers")
def invalid_tool_headers(url: str) -> None:
    """Call every tool the client keeps: those with invalid x-mcp-header declarations are left out of the list."""
    with session(url) as client:
        for tool in client.list_tools():
            properties = (tool.input_schema or {}).get("properties") or {}
            client.call_tool(tool.name, {"region": "us-west1"} if "region" in properties else {})


@scenario("json-schema-ref-no-deref")
def ref_no_deref(url: str) -> None:
    """List the tools (an SSE answer): a $ref to a URL in a schema is kept, never fetched (SEP-2106)."""
    with session(url) as client:
        client.list_tools()


#: auth/basic-cimd: the suite expects this Client ID Metadata Document URL as the client id.
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def oauth_for(name: str, context: dict) -> OAuth:
    """The OAuth configuration a scenario calls for (its credentials and keys from the context)."""
    from mcp_ref.oauth.assertions import IdJagExchange
    from mcp_ref.oauth.browser import follow_redirect

    if name.startswith("auth/client-credentials-"):
        return OAuth(
            context["client_id"],
            context.get("client_secret"),
            grant="client_credentials",
            private_key=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    if name == "auth/enterprise-managed-authorization":
        exchange = IdJagExchange(
            context["idp_token_endpoint"],
            context["idp_id_token"],
            client_id=context.get("idp_client_id"),
        )
        return OAuth(context["client_id"], context["client_secret"], assertion=exchange)
    if name == "auth/wif-jwt-bearer":
        return OAuth(context.get("client_id"), assertion=context["valid_jwt"])
    return OAuth(
        context.get("client_id"),
        context.get("client_secret"),
        issuer=context.get("issuer"),
        client_metadata_url=CIMD_URL,
        authorize=follow_redirect,
        dpop=name.startswith("auth/dpop"),
        client_name="mcp-ref-conformance-client",
    )


def authorized(name: str, url: str) -> None:
    """Every auth scenario: connect with OAuth, list the tools, call test-tool (a step-up may come there).

    auth/scope-retry-limit: the server never accepts any scope; the client must give up after a few
    authorizations, so InsufficientScope is this scenario's success."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    auth = oauth_for(name, context)
    refusal = MUST_REFUSE.get(name)
    try:
        with session(url, auth=auth) as client:
            tools = client.list_tools()
            if any(tool.name == "test-tool" for tool in tools):
                client.call_tool("test-tool", {})
    except AuthorizationError as exc:
        if refusal is None or not isinstance(exc, refusal):
            raise
        print(f"client.py: refused as the scenario requires: {exc}", file=sys.stderr)
        return
    if refusal is not None:
        raise SystemExit(
            f"the scenario requires a refusal ({refusal.__name__}), yet the calls succeeded"
        )


#: The auth scenarios whose server misbehaves on purpose: the client must stop with this error.
MUST_REFUSE = {
    "auth/scope-retry-limit": InsufficientScope,  # no scope is ever enough: give up after a few tries
    "auth/iss-normalized": CallbackError,  # RFC 9207: iss compared exactly, not normalized
    "auth/iss-supported-missing": CallbackError,  # iss promised by the metadata, absent
    "auth/iss-unexpected": CallbackError,  # iss not promised, present and wrong
    "auth/iss-wrong-issuer": CallbackError,
    "auth/metadata-issuer-mismatch": MetadataError,  # RFC 8414 §3.3: issuer must equal the one asked
    "auth/resource-mismatch": MetadataError,  # RFC 9728 §3.3: resource must equal the server's
}


def main(argv: list[str]) -> int:
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(argv) != 2:
        print("usage: client.py URL (with MCP_CONFORMANCE_SCENARIO set)", file=sys.stderr)
        return 1
    url = argv[1]
    run = (lambda url: authorized(name, url)) if name.startswith("auth/") else SCENARIOS.get(name)
    if run is None:
        return not_implemented(name, f"unknown scenario; known: {', '.join(sorted(SCENARIOS))}")
    context = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if context:
        print(f"client.py: context {context}", file=sys.stderr)
    try:
        run(url)
    except (
        McpError,
        OSError,
        TimeoutError,
        CloseHung,
        AuthorizationError,
    ) as exc:  # protocol errors, refused connections, timeouts
        return failed(name, f"{type(exc).__name__}: {exc}")
    except SystemExit as exc:
        return failed(name, str(exc.code))
    except Exception as exc:
        traceback.print_exc()
        return failed(name, f"{type(exc).__name__}: {exc}")
    # run.py reads this line from the scenario's stdout.txt: the tool does not record the client's exit status.
    print(f"client.py: RESULT ok: {name}", flush=True)
    return 0


def failed(name: str, why: str) -> int:
    print(f"client.py: {name}: {why}", file=sys.stderr, flush=True)
    print(f"client.py: RESULT failed: {name}: {why}", flush=True)
    return 1


def not_implemented(name: str, why: str) -> int:
    print(f"client.py: scenario {name!r} is not implemented: {why}", file=sys.stderr, flush=True)
    print(f"client.py: RESULT not implemented: {name}: {why}", flush=True)
    return 2


if __name__ == "__main__":
    status = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # Exit even if a transport thread is still blocked (it was reported above when close() hung);
    # the suite waits for this process, and a hung client would hang the whole run.
    os._exit(status)
