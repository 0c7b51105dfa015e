"""A raw (hand-written JSON lines) stdio server that misbehaves on purpose.

python untested_raw_server.py silent-init FILE
    Never answers anything.  Appends every line it receives to FILE, and ``EOF``
    when its stdin ends (then exits 0), so a test can read afterwards exactly what
    the client sent.
python untested_raw_server.py repeat-cursor
    Answers initialize (tools only) and ping; every tools/list result carries the
    same nextCursor.  After five tools/list it stops answering them, so a client that
    keeps following the cursor times out instead of looping forever.
python untested_raw_server.py empty-cursor [forever]
    Answers initialize and server/discover (2026-07-28) with tools only, and ping.  The first
    tools/list page holds the tool "first" and ``nextCursor: ""``; the page at cursor ``""``
    holds "second" and no nextCursor.  With ``forever``, every page's nextCursor is ``""``.
python untested_raw_server.py stall-unsubscribe
    Answers initialize (resources with subscribe) and every other request with an empty
    result, but never resources/unsubscribe.
python untested_raw_server.py hold-unsubscribe
    Answers initialize (resources with subscribe, tools, logging).  Acts on a subscription
    request when it answers it: resources/subscribe at once; resources/unsubscribe is held,
    announced with a notifications/message whose data is its URI, and answered (and acted on)
    only when the next ping arrives, as a server handling requests at once may act on it after
    a later request.  A held request the client cancels is dropped.  tools/call answers the URIs
    subscribed now, as JSON text; every other request is answered with an empty result.
python untested_raw_server.py sub-resources
    Answers initialize (resources with subscribe) and every request with an empty result.  On
    resources/subscribe of URI, once answered, it sends notifications/resources/updated about
    URI/a.txt (below it), URIx (beside it, not below) and URI itself, in that order.
python untested_raw_server.py batch-ping
    Answers initialize (tools only) at the version asked for.  On
    notifications/initialized it sends the client a JSON-RPC batch of two pings
    (ids "s1" and "s2").  A tools/call is answered — once the client's reply to the
    batch has arrived — with that reply, as JSON text.
"""

import json
import sys

MODERN = "2026-07-28"
MODERN_VERSION = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def send(message) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def initialize_result(message) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": message["id"],
        "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "untested-raw", "version": "0"},
        },
    }


def silent_init(path: str) -> None:
    with open(path, "a") as record:
        for line in sys.stdin:
            if line.strip():
                record.write(line.strip() + "\n")
                record.flush()
        record.write("EOF\n")


def repeat_cursor() -> None:
    pages = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method") if isinstance(message, dict) else None
        if method == "initialize":
            send(initialize_result(message))
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif method == "tools/list" and pages < 5:
            pages += 1
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "tools": [{"name": "again", "inputSchema": {"type": "object"}}],
                        "nextCursor": "same-cursor",
                    },
                }
            )


def empty_cursor(forever: bool) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, params = message.get("method"), message.get("params") or {}
        modern = MODERN_VERSION in (params.get("_meta") or {})
        if method == "initialize":
            send(initialize_result(message))
            continue
        if method == "server/discover":
            result = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
            result["_meta"] = {SERVER_INFO: {"name": "untested-raw", "version": "0"}}
        elif method == "ping":
            result = {}
        elif method == "tools/list" and (forever or "cursor" not in params):
            result = {"tools": [{"name": "first", "inputSchema": {"type": "object"}}]}
            result["nextCursor"] = ""
        elif method == "tools/list" and params["cursor"] == "":
            result = {"tools": [{"name": "second", "inputSchema": {"type": "object"}}]}
        else:
            if "id" in message:
                error = {"code": -32602, "message": "unknown cursor"}
                send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            continue
        if modern:
            result.update(resultType="complete", ttlMs=0, cacheScope="private")
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})


def subscribable_requests():
    """Each request the client sends after ``initialize``, which is answered with resources that
    can be subscribed to (notifications and blank lines are passed over)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            answer = initialize_result(message)
            answer["result"]["capabilities"] = {"resources": {"subscribe": True}}
            send(answer)
        elif method is not None and "id" in message:
            yield message


def stall_unsubscribe() -> None:
    for message in subscribable_requests():
        if message["method"] != "resources/unsubscribe":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})


def hold_unsubscribe() -> None:
    subscribed: set[str] = set()
    held: dict = {}  # id -> URI of the resources/unsubscribe requests not answered yet
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, params = message.get("method"), message.get("params") or {}
        result: dict = {}
        if method == "initialize":
            answer = initialize_result(message)
            capabilities = {"resources": {"subscribe": True}, "tools": {}, "logging": {}}
            answer["result"]["capabilities"] = capabilities
            send(answer)
            continue
        if method == "notifications/cancelled":
            held.pop(params.get("requestId"), None)
            continue
        if "id" not in message:
            continue
        if method == "resources/subscribe":
            subscribed.add(params["uri"])
        elif method == "resources/unsubscribe":
            held[message["id"]] = params["uri"]
            log = {"level": "info", "data": params["uri"]}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
            continue
        elif method == "ping":
            for request_id, uri in held.items():
                subscribed.discard(uri)
                send({"jsonrpc": "2.0", "id": request_id, "result": {}})
            held.clear()
        elif method == "tools/call":
            text = json.dumps(sorted(subscribed))
            result = {"content": [{"type": "text", "text": text}]}
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})


def sub_resources() -> None:
    for message in subscribable_requests():
        send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        if message["method"] == "resources/subscribe":
            uri = message["params"]["uri"]
            for updated in (uri + "/a.txt", uri + "x", uri):
                params = {"uri": updated}
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/resources/updated",
                        "params": params,
                    }
                )


def batch_ping() -> None:
    answer = None
    waiting: list = []  # ids of tools/call requests that arrived before the answer to the batch
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if isinstance(message, dict) and message.get("method") == "initialize":
            send(initialize_result(message))
        elif isinstance(message, dict) and message.get("method") == "notifications/initialized":
            send(
                [
                    {"jsonrpc": "2.0", "id": "s1", "method": "ping"},
                    {"jsonrpc": "2.0", "id": "s2", "method": "ping"},
                ]
            )
        elif isinstance(message, dict) and message.get("method") == "tools/call":
            waiting.append(message["id"])
        elif isinstance(message, dict) and "method" in message:
            continue
        elif answer is None:
            answer = message  # a list (the batch's answers) or one error object
        if answer is not None:
            for request_id in waiting:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "result": {"content": [{"type": "text", "text": json.dumps(answer)}]},
                    }
                )
            waiting = []


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "silent-init":
        silent_init(sys.argv[2])
    elif mode == "repeat-cursor":
        repeat_cursor()
    elif mode == "empty-cursor":
        empty_cursor(sys.argv[2:] == ["forever"])
    elif mode == "stall-unsubscribe":
        stall_unsubscribe()
    elif mode == "hold-unsubscribe":
        hold_unsubscribe()
    elif mode == "sub-resources":
        sub_resources()
    elif mode == "batch-ping":
        batch_ping()
    else:
        sys.exit(f"unknown mode {mode!r}")
