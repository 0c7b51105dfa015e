"""FastMCP's idioms on mcp_ref's Server (issue 34 item 5): what a server written for FastMCP 2.x or for
the official SDK's ``mcp.server.fastmcp.FastMCP`` passes is taken when its meaning maps onto
mcp_ref's (``log_level=``, ``stateless_http=``, ``host=``/``port=``, ``add_tool(fn=...)``,
``tags=``, ``run(transport="http", path=, stateless_http=)``), and otherwise refused with an error
naming mcp_ref's equivalent (mcp_ref/server/fastmcp_names.py), never a bare TypeError.
"""

from __future__ import annotations

import logging
import queue
import subprocess
import sys
import textwrap
import threading

import pytest
import requests
from conftest import WAIT, watch_stderr
from http_fixtures import ACCEPT_BOTH, TIMEOUT, start

from mcp_ref import Client, Context, Server

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture
def mcp_ref_logger():
    """The ``mcp_ref`` logger's level and handlers, put back after the test."""
    logger = logging.getLogger("mcp_ref")
    level, handlers = logger.level, list(logger.handlers)
    yield logger
    logger.setLevel(level)
    logger.handlers[:] = handlers


# -- the constructor -------------------------------------------------------------------------------


def test_log_level_sets_mcp_refs_own_logging_on_stderr(mcp_ref_logger):
    Server("x", log_level="DEBUG")
    assert mcp_ref_logger.level == logging.DEBUG
    assert [h.get_name() for h in mcp_ref_logger.handlers].count("mcp_ref-stderr") == 1
    Server("y", log_level="warning")  # either case; a second server changes only the level
    assert mcp_ref_logger.level == logging.WARNING
    assert [h.get_name() for h in mcp_ref_logger.handlers].count("mcp_ref-stderr") == 1


def test_a_log_level_that_is_none_is_refused_naming_the_levels():
    with pytest.raises(ValueError, match="log_level must be one of debug, info"):
        Server("x", log_level="LOUD")


def test_tools_and_dependencies_are_taken():
    server = Server("x", tools=[add], dependencies=["pandas"], include_fastmcp_meta=False)
    assert [tool.name for tool in server.registered_tools()] == ["add"]


@pytest.mark.parametrize(
    "keyword, value",
    [
        ("debug", False),
        ("mask_error_details", True),
        ("warn_on_duplicate_tools", True),
        ("on_duplicate_tools", "warn"),
        ("on_duplicate_prompts", "replace"),
    ],
)
def test_a_setting_that_asks_for_what_mcp_ref_does_is_taken(keyword, value):
    Server("x", **{keyword: value})


@pytest.mark.parametrize(
    "keyword, value, equivalent",
    [
        ("debug", True, "log_level='DEBUG'"),
        ("mask_error_details", False, "raise ToolError(message)"),
        ("warn_on_duplicate_tools", False, "server.get_tool(name)"),
        ("on_duplicate_tools", "error", "look before registering"),
        ("auth", object(), "wsgi_app(auth=ProtectedResource"),
        ("token_verifier", object(), "protected resource"),
        ("transport_security", object(), "allowed_hosts="),
        ("mount_path", "/x", "path= option"),
        ("include_tags", {"a"}, "Server(authorize=fn)"),
        ("middleware", [], "Extension"),
        ("icons", [], "icons= of each tool"),
    ],
)
def test_a_fastmcp_keyword_mcp_ref_cannot_take_is_refused_naming_the_equivalent(
    keyword, value, equivalent
):
    with pytest.raises(TypeError) as refused:
        Server("x", **{keyword: value})
    message = str(refused.value)
    assert message.startswith(f"Server() does not take FastMCP's {keyword}"), message
    assert "mcp_ref's equivalent: " in message and equivalent in message, message


def test_a_fastmcp_keyword_given_its_default_none_asks_for_nothing_and_is_taken():
    server = Server("x", auth=None, token_verifier=None, middleware=None, include_tags=None)
    server.tool(exclude_args=None, serializer=None)(add)
    assert server.get_tool("add") is not None
    assert server.http_defaults == {}


def test_a_refused_keyword_leaves_nothing_half_done(mcp_ref_logger):
    level = mcp_ref_logger.level
    with pytest.raises(TypeError, match="FastMCP's debug=True"):
        Server("x", log_level="DEBUG", debug=True, tools=[add])
    assert mcp_ref_logger.level == level  # checked before anything was applied


def test_a_keyword_no_one_knows_is_refused_as_python_refuses_it():
    with pytest.raises(
        TypeError, match=r"^Server\(\) got an unexpected keyword argument 'colour'$"
    ):
        Server("x", colour="blue")


def test_stateless_http_and_json_response_make_the_http_app_stateless():
    server = Server("x", stateless_http=True, json_response=True, streamable_http_path="/api")
    server.tool(add)
    app = server.wsgi_app()
    assert (app.stateless, app.json_response, app.path) == (True, True, "/api")
    assert server.wsgi_app(stateless=False).stateless is False  # the call's own options win
    served = start(server, path="/api")
    try:
        reply = requests.post(
            served.url + "/api",
            json=INITIALIZE,
            headers={"Accept": ACCEPT_BOTH},
            timeout=TIMEOUT,
        )
        assert reply.status_code == 200, reply.text
        assert "Mcp-Session-Id" not in reply.headers  # stateless: no session
        assert reply.headers["Content-Type"].startswith("application/json")  # json_response
        with Client.http(served.url + "/api", timeout=WAIT) as client:
            assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
    finally:
        served.stop()


# -- the items -------------------------------------------------------------------------------------


def test_add_tool_takes_fn_as_a_keyword_as_the_official_sdk_writes_it():
    server = Server("x")
    server.add_tool(fn=add, name="plus", description="Adds.")
    tool = server.get_tool("plus")
    assert tool is not None and tool.listing["description"] == "Adds."
    with Client.in_memory(server, timeout=WAIT) as client:
        assert client.call_tool("plus", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_tags_are_kept_for_the_servers_own_code_and_enabled_true_is_taken():
    server = Server("x")
    server.tool(name="add", tags={"math"}, enabled=True)(add)
    server.prompt(name="greet", tags=["polite"])(lambda who: f"Hello {who}")
    server.resource("data://one", tags={"static"})(lambda: "1")
    tool = server.get_tool("add")
    assert tool is not None and tool.options["tags"] == frozenset({"math"})
    prompt = server.get_prompt("greet")
    assert prompt is not None and prompt.options["tags"] == frozenset({"polite"})
    with Client.in_memory(server, timeout=WAIT) as client:
        listed = client.list_tools()[0]
        assert listed.name == "add" and listed.meta is None  # nothing FastMCP-specific is sent


@pytest.mark.parametrize(
    "option, value, equivalent",
    [
        ("enabled", False, "remove_tool(name)"),
        ("structured_output", False, "-> str"),
        ("exclude_args", ["a"], "functools.partial"),
        ("serializer", str, "return a str"),
    ],
)
def test_an_item_option_mcp_ref_cannot_take_is_refused_naming_the_equivalent(
    option, value, equivalent
):
    server = Server("x")
    with pytest.raises(TypeError) as refused:
        server.tool(**{option: value})(add)
    message = str(refused.value)
    assert f"does not take FastMCP's {option}" in message and equivalent in message, message
    assert server.get_tool("add") is None


def test_structured_output_false_has_its_equivalent_a_tool_without_a_return_annotation():
    server = Server("x")

    @server.tool
    def point(x: int):
        return {"x": x}

    with Client.in_memory(server, timeout=WAIT) as client:
        result = client.call_tool("point", {"x": 1})
        assert result.structured_content is None and result.content[0].text == '{"x": 1}'


# -- members ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, equivalent",
    [
        ("settings", "MCP_REF_HOST"),
        ("custom_route", "WSGI"),
        ("streamable_http_app", "server.wsgi_app()"),
        ("run_async", "synchronous"),
        ("get_tools", "server.registered_tools()"),
        ("mount", "one Server"),
    ],
)
def test_a_missing_member_fastmcp_has_names_mcp_refs_equivalent(name, equivalent):
    server = Server("x")
    with pytest.raises(AttributeError) as missing:
        getattr(server, name)
    message = str(missing.value)
    assert message.startswith(f"'Server' object has no attribute {name!r} (FastMCP's)"), message
    assert equivalent in message
    assert not hasattr(server, name)
    assert getattr(server, name, "default") == "default"


def test_a_missing_member_of_no_one_is_python_s_attribute_error():
    server = Server("x")
    with pytest.raises(AttributeError, match=r"^'Server' object has no attribute 'tols'$"):
        server.tols  # noqa: B018
    with pytest.raises(AttributeError, match="__deepcopy__"):
        server.__deepcopy__  # noqa: B018


def test_context_members_fastmcp_names_differently():
    server = Server("x")
    logs: list = []
    logged = threading.Condition()

    @server.resource("notes://today")
    def today() -> str:
        return "buy milk"

    @server.tool
    async def inspect(ctx: Context[object, None]) -> dict:  # the official SDK's Context[...]
        """What FastMCP's context members are here."""
        await ctx.info("looking", logger_name="inspector")  # FastMCP's keyword for the logger
        await ctx.log("fastmcp order", level="warning")  # FastMCP 2.x: log(message, level=)
        await ctx.log(level="error", message="sdk keywords", logger_name="kw")  # the SDK's names
        await ctx.log("notice", "mcp_ref order", "plain")  # mcp_ref's and the SDK's order
        contents = await ctx.read_resource("notes://today")
        answers = {"content": contents[0].content}
        for name in ("session", "fastmcp", "get_state", "request_context"):
            try:
                getattr(ctx, name)
            except AttributeError as missing:
                answers[name] = str(missing)
        return answers

    def on_log(message):
        with logged:
            logs.append(message)
            logged.notify_all()

    with Client.in_memory(server, timeout=WAIT, on_log=on_log) as client:
        client.set_logging_level("debug")
        answers = client.call_tool("inspect", {}).structured_content
    assert answers["content"] == "buy milk"
    assert "ctx.sample(...)" in answers["session"]
    assert "ctx.connection.server" in answers["fastmcp"]
    assert "ctx.lifespan_context" in answers["get_state"]
    assert "ctx.request_id" in answers["request_context"]
    with logged:
        assert logged.wait_for(lambda: len(logs) == 4, WAIT), logs
    assert [(log.level, log.logger, log.data) for log in logs] == [
        ("info", "inspector", "looking"),
        ("warning", None, "fastmcp order"),
        ("error", "kw", "sdk keywords"),
        ("notice", "plain", "mcp_ref order"),
    ]


# -- run() ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, equivalent",
    [
        ({"transport": "http", "uvicorn_config": {}}, "connection_limits=ConnectionLimits"),
        ({"transport": "http", "mount_path": "/x"}, "path= option"),
        ({"transport": "stdio", "path": "/mcp"}, "options of serving over HTTP"),
    ],
)
def test_run_refuses_before_serving_naming_the_equivalent(options, equivalent):
    with pytest.raises(TypeError, match=equivalent.replace("(", r"\(")):
        Server("x").run(**options)


SERVED_OVER_HTTP = """
from mcp_ref import Server as FastMCP

mcp = FastMCP("adder", host="127.0.0.1", port=0, log_level="WARNING")


@mcp.tool
def add(a: int, b: int) -> int:
    return a + b


mcp.run({run})
"""


def serve_in_a_subprocess(tmp_path, run_arguments: str):
    """The script above, run with ``mcp.run(<run_arguments>)``: the process, and the URL of the
    endpoint it announced on stderr."""
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(SERVED_OVER_HTTP.format(run=run_arguments)))
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    seen: list[str] = []
    watch_stderr("fastmcp-style http", lambda: seen)

    def pump():
        for line in process.stderr:
            seen.append(line)
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        line = lines.get(timeout=WAIT)
        while not line.startswith("serving "):  # a warning first (log_level="WARNING" shows them)
            line = lines.get(timeout=WAIT)
        assert line.startswith("serving adder at http://127.0.0.1:"), line
    except BaseException:  # no address: the process is stopped here, not left behind
        process.terminate()
        process.wait(WAIT)
        raise
    return process, line.split()[3]


@pytest.mark.slow
@pytest.mark.parametrize(
    "run_arguments, path",
    [
        # the official SDK: host and port from the constructor
        ('transport="streamable-http"', "/mcp"),
        # FastMCP 2.x: run(transport="http", path=..., stateless_http=...)
        ('transport="http", path="/api/mcp", stateless_http=True, show_banner=False', "/api/mcp"),
    ],
)
def test_run_over_http_with_fastmcps_keywords_serves(tmp_path, run_arguments, path):
    process, url = serve_in_a_subprocess(tmp_path, run_arguments)
    try:
        assert url.endswith(path) and not url.endswith(":0" + path), url
        with Client.http(url, timeout=WAIT) as client:
            assert client.call_tool("add", {"a": 2, "b": 40}).structured_content == {"result": 42}
    finally:
        process.terminate()
        process.wait(WAIT)


@pytest.mark.slow
def test_run_on_stdio_with_fastmcps_keywords_serves(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent(SERVED_OVER_HTTP.format(run='transport="stdio", show_banner=False'))
    )
    with Client.stdio([sys.executable, str(script)], timeout=WAIT) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}


@pytest.mark.slow
def test_a_server_using_mcp_refs_own_names_never_loads_the_fastmcp_table(tmp_path):
    script = tmp_path / "own_names.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys

            from mcp_ref import Client, Context, Server

            server = Server("own", instructions="mcp_ref's names only")


            @server.tool(description="Add.", annotations={"readOnlyHint": True})
            def add(a: int, b: int, ctx: Context) -> int:
                ctx.info("adding")
                return a + b


            server.add_tool(lambda: "hi", name="hello")
            server.resource("data://{key}")(lambda key: key)
            server.prompt(name="ask")(lambda topic: topic)
            with Client.in_memory(server) as client:
                assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
                assert client.read_resource("data://k").contents[0].text == "k"
            loaded = [name for name in sys.modules if name.startswith("mcp_ref.server.")]
            print(sorted(loaded))
            assert "mcp_ref.server.fastmcp_names" not in loaded
            assert "mcp_ref.server.running" not in loaded
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stdout + done.stderr
