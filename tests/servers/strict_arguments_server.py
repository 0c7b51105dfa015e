"""A raw stdio server (2025-06-18) whose tools check their arguments beyond their schemas, as a
conforming server may: invalid arguments get the protocol error -32602 (2025-06-18 server/tools
§Error Handling: "Protocol Errors: ... Invalid arguments"), or an isError result.  Run by
``mcp-ref check --call-tools``, whose examples these tools refuse or accept:

- ``lookup``: ``order`` must match a pattern (the example is not tried);
- ``find``: ``order`` is a plain string, but only known orders are found (-32602 for the example);
- ``ship``: answers isError for every order;
- ``bounded``: a number within minimum/maximum, an exclusive range, a bounded string, an enum and
  a date: refused (-32602) unless every value is within its schema;
- ``crash``: answers -32603, a wrong error for arguments (still a failure);
- ``vast``: bounds beyond every float (``10**400``: a JSON number may have any digits, RFC 8259
  §6): refused (-32602) unless every value is within them, compared exactly;
- ``amplify``: a small schema of nested arrays (16 items each, an object between them) whose
  example would be megabytes (answered -32602 if ever called);
- ``long``: a string of at least 1,000 characters: accepted when it has them;
- ``brink`` and ``brink_below``: an exclusive bound of 4,300 digits (the most Python's ``json``
  reads and writes), every number it allows longer (answered -32602 if ever called).
"""

import json
import sys

STRING = {"type": "string"}
VAST = 10**400  # no float holds it
BRINK = 10**4300 - 1  # 4,300 nines: one more is a digit longer than Python writes as text
LONG_TEXT = {"type": "string", "minLength": 1000}


def sixteen(items: dict) -> dict:
    """An array schema of at least 16 ``items``."""
    return {"type": "array", "minItems": 16, "items": items}


def one(name: str, prop: dict) -> dict:
    """An object schema whose one property ``name`` is required."""
    return {"type": "object", "properties": {name: prop}, "required": [name]}


AMPLIFIED = sixteen(one("a", sixteen(sixteen(LONG_TEXT))))
TOOLS = [
    {
        "name": "lookup",
        "inputSchema": {
            "type": "object",
            "properties": {"order": {"type": "string", "pattern": "^[0-9]{6}$"}},
            "required": ["order"],
        },
    },
    {
        "name": "find",
        "inputSchema": {"type": "object", "properties": {"order": STRING}, "required": ["order"]},
    },
    {
        "name": "ship",
        "inputSchema": {"type": "object", "properties": {"order": STRING}, "required": ["order"]},
    },
    {
        "name": "bounded",
        "inputSchema": {
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 5, "maximum": 9},
                "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "below": {"type": "integer", "maximum": -3},
                "code": {"type": "string", "minLength": 2, "maxLength": 3},
                "size": {"type": "string", "enum": ["S", "M"]},
                "day": {"type": "string", "format": "date"},
            },
            "required": ["count", "ratio", "below", "code", "size", "day"],
        },
    },
    {"name": "crash", "inputSchema": {"type": "object"}},
    {
        "name": "vast",
        "inputSchema": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "maximum": VAST},
                "far": {"type": "integer", "minimum": VAST},
                "x": {"type": "number", "minimum": -VAST, "maximum": VAST},
                "gap": {"type": "number", "exclusiveMinimum": VAST, "exclusiveMaximum": VAST + 2},
                "half": {"type": "number", "exclusiveMinimum": 1.5, "maximum": VAST},
            },
            "required": ["n", "far", "x", "gap", "half"],
        },
    },
    {"name": "amplify", "inputSchema": one("a", AMPLIFIED)},
    {"name": "long", "inputSchema": one("text", LONG_TEXT)},
    {"name": "brink", "inputSchema": one("n", {"type": "integer", "exclusiveMinimum": BRINK})},
    {
        "name": "brink_below",
        "inputSchema": one("x", {"type": "number", "exclusiveMaximum": -BRINK}),
    },
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def within_bounds(arguments: dict) -> bool:
    """True when ``bounded``'s arguments meet its schema."""
    day = str(arguments.get("day", ""))
    return (
        arguments.get("count") in range(5, 10)
        and 0 < arguments.get("ratio", 0) < 1
        and isinstance(arguments.get("below"), int)
        and arguments["below"] <= -3
        and 2 <= len(str(arguments.get("code", ""))) <= 3
        and arguments.get("size") in ("S", "M")
        and len(day) == 10
        and day[4] == day[7] == "-"
    )


def within_vast(arguments: dict) -> bool:
    """True when ``vast``'s arguments meet its schema (Python compares them exactly)."""
    n, far, x = (arguments.get(key) for key in ("n", "far", "x"))
    gap, half = arguments.get("gap", 0), arguments.get("half", 0)
    return (
        isinstance(n, int)
        and n <= VAST
        and isinstance(far, int)
        and far >= VAST
        and isinstance(x, (int, float))
        and -VAST <= x <= VAST
        and VAST < gap < VAST + 2
        and 1.5 < half <= VAST
    )


def call(request_id, params: dict) -> None:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    text = {"content": [{"type": "text", "text": "done"}]}
    if name == "find":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32602, "message": "Invalid arguments: no such order"},
            }
        )
    elif name == "ship":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"content": [{"type": "text", "text": "not shippable"}], "isError": True},
            }
        )
    elif name == "bounded" and within_bounds(arguments):
        send({"jsonrpc": "2.0", "id": request_id, "result": text})
    elif name == "long" and len(str(arguments.get("text"))) >= 1000:
        send({"jsonrpc": "2.0", "id": request_id, "result": text})
    elif name == "vast" and within_vast(arguments):
        send({"jsonrpc": "2.0", "id": request_id, "result": text})
    elif name == "crash":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32603, "message": "Internal error"},
            }
        )
    else:
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32602, "message": f"Invalid arguments for {name}"},
            }
        )


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method, request_id, params = message["method"], message["id"], message.get("params") or {}
    if method == "initialize":
        info = {"name": "strict", "version": "1"}
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": info,
        }
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    elif method == "tools/list" and "cursor" in params:
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32602, "message": "Invalid cursor"},
            }
        )
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        call(request_id, params)
    else:
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32601, "message": "Method not found"},
            }
        )
