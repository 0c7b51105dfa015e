"""A raw stdio server that plays one kind of peer a dual-era client meets (argv[1]):

* ``legacy``: a handshake-only server; a request before ``initialize`` gets -32600, and
  ``server/discover`` is an unknown method;
* ``silent``: the same, but a request before ``initialize`` gets no answer at all;
* ``silent-old``: the same, answering ``initialize`` with 2024-10-07, a version mcp_ref does not
  speak;
* ``reject-first``: a modern server that refuses the first request with -32022 (as the
  conformance scenario request-metadata does), then answers;
* ``modern-only``: a modern server that speaks a version the client does not (2099-01-01);
* ``asks``: a modern server that, before it answers ``tools/call``, writes what a 2026-07-28 server
  never may (basic/transports/stdio: "The server MUST NOT write JSON-RPC requests to stdout"):
  a line that is not JSON, a ``ping``, a ``sampling/createMessage`` and a ``roots/list``;
* ``asks-in-listing``: a modern server that answers ``tools/list`` with ``input_required``
  (which mrtr §Supported Requests forbids: only ``tools/call``, ``prompts/get``,
  ``resources/read`` may have it), asking for sampling;
* ``legacy-code:<code>``: a handshake-only server that refuses a request before ``initialize``
  (the probe) with the JSON-RPC error ``<code>``;
* ``listen-extra``: a modern server declaring list changes and subscriptions that acknowledges a
  ``subscriptions/listen`` for its resource URIs only, then sends on that stream what the
  acknowledgment left out (``tools`` and ``prompts`` list changes, an update of ``other://x``),
  then an update of the first URI asked for;
* ``unsolicited``: the same server, which before answering ``tools/call`` sends change
  notifications on no listen stream and ``notifications/elicitation/complete`` (2025-11-25's,
  gone at 2026-07-28), then a ``notifications/message``;
* ``listen-silent``: the same server, which never answers ``subscriptions/listen``;
* ``cache-race``: the same server, which acknowledges a ``subscriptions/listen`` as asked and
  answers its first ``tools/list`` (``ttlMs`` five minutes) with the tool ``before``, but sends
  ``notifications/tools/list_changed`` on the last stream opened before that answer (the list
  changed while the answer was on its way); later listings have the tool ``after``;
* ``slow-start:<fifo>``: a modern server slow to start (it opens the named pipe ``<fifo>`` first,
  which blocks until the test opens it to write), that answers ``server/discover`` and refuses
  ``initialize`` with -32022 once it has (as the official SDK's server does on a connection
  serving 2026-07-28);
* ``cursor-epochs``: a modern server listing its tools in two pages, ``a<epoch>`` (``ttlMs`` ten
  minutes, ``nextCursor`` ``e<epoch>:1``) and ``b<epoch>`` (not to be cached); a ``tools/call``
  stands for a redeploy: the epoch goes up, and the cursors handed out before are refused
  (-32602).

In every mode a ``tools/call`` whose arguments hold ``progress`` (a list of objects) first sends
each as the params of a ``notifications/progress`` for the request's ``progressToken``.

It writes every request it receives to stderr as ``got <json>``.  Written by hand (no mcp_ref)
so the tests see the client against code that shares nothing with it.
"""

import json
import sys

MODE = sys.argv[1]
MODERN = "2026-07-28"
#: The modes whose server declares list changes and resource subscriptions.
WITH_CHANGES = ("listen-extra", "unsolicited", "listen-silent", "cache-race")
CHANGES = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
}
TOOL = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def error(request_id, code, message, data=None):
    body = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    send({"jsonrpc": "2.0", "id": request_id, "error": body})


def report_progress(message):
    """Send the progress reports a tools/call's ``progress`` argument lists, as they are."""
    params = message.get("params") or {}
    token = params.get("_meta", {}).get("progressToken")
    for report in params.get("arguments", {}).get("progress", []):
        note = {"progressToken": token, **report}
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})


def legacy(message, state):
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        if method == "notifications/initialized":
            state["ready"] = True
        return
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "protocolVersion": "2024-10-07" if MODE == "silent-old" else "2025-06-18",
                    "capabilities": CHANGES if MODE in WITH_CHANGES else {"tools": {}},
                    "serverInfo": {"name": "legacy", "version": "1"},
                },
            }
        )
    elif not state.get("ready"):
        if MODE == "legacy":
            error(request_id, -32600, "Invalid Request: not initialized")
        elif MODE.startswith("legacy-code:"):
            error(request_id, int(MODE.partition(":")[2]), "not initialized")
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        report_progress(message)
        text = message["params"].get("arguments", {}).get("text", "")
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"content": [{"type": "text", "text": text}]},
            }
        )
    else:
        error(request_id, -32601, f"Method not found: {method}")


def modern(message, state):
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return
    version = (
        (message.get("params") or {})
        .get("_meta", {})
        .get("io.modelcontextprotocol/protocolVersion")
    )
    supported = ["2099-01-01"] if MODE == "modern-only" else [MODERN]
    if not state.get("rejected") or version not in supported:
        state["rejected"] = True
        error(
            request_id,
            -32022,
            "Unsupported protocol version",
            {"supported": supported, "requested": version},
        )
    elif method == "server/discover":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "resultType": "complete",
                    "supportedVersions": supported,
                    "capabilities": CHANGES if MODE in WITH_CHANGES else {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": {
                        "io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}
                    },
                },
            }
        )
    elif method == "tools/list" and MODE == "cursor-epochs":
        epoch = state.setdefault("epoch", 1)
        cursor = (message.get("params") or {}).get("cursor")
        if cursor not in (None, f"e{epoch}:1"):
            error(request_id, -32602, "Invalid params: invalid cursor")
            return
        first = cursor is None
        tool = {"name": f"{'a' if first else 'b'}{epoch}", "inputSchema": {"type": "object"}}
        listing = {"resultType": "complete", "tools": [tool], "cacheScope": "public"}
        more = {"nextCursor": f"e{epoch}:1", "ttlMs": 600_000} if first else {}
        send({"jsonrpc": "2.0", "id": request_id, "result": {**listing, **more}})
    elif method == "tools/call":
        report_progress(message)
        state["epoch"] = state.get("epoch", 1) + 1
        if MODE == "asks":
            sys.stdout.write("this is not JSON\n")
            send({"jsonrpc": "2.0", "id": "s-1", "method": "ping"})
            sampling = {"messages": [], "maxTokens": 1}
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "s-2",
                    "method": "sampling/createMessage",
                    "params": sampling,
                }
            )
            send({"jsonrpc": "2.0", "id": "s-3", "method": "roots/list"})
        if MODE == "unsolicited":
            for method in (
                "notifications/tools/list_changed",
                "notifications/prompts/list_changed",
            ):
                send({"jsonrpc": "2.0", "method": method})
            updated = {"uri": "a://b"}
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": updated})
            elicitation = {"elicitationId": "e-1"}
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/elicitation/complete",
                    "params": elicitation,
                }
            )
            logged = {"level": "info", "data": "after the unsolicited ones"}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": logged})
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]},
            }
        )
    elif method == "tools/list" and MODE == "asks-in-listing":
        sampling = {"messages": [], "maxTokens": 1}
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {
                        "s": {"method": "sampling/createMessage", "params": sampling}
                    },
                    "requestState": "listing",
                },
            }
        )
    elif method == "subscriptions/listen" and MODE == "listen-extra":
        listen_extra(request_id, message["params"].get("notifications", {}))
    elif method == "subscriptions/listen" and MODE == "listen-silent":
        return
    elif method == "subscriptions/listen" and MODE == "cache-race":
        state["listen"] = request_id
        wanted = message["params"].get("notifications", {})
        on_stream = {"io.modelcontextprotocol/subscriptionId": request_id}
        acknowledged = {"_meta": on_stream, "notifications": wanted}
        send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": acknowledged,
            }
        )
    elif method == "tools/list" and MODE == "cache-race":
        name = "after" if state.get("listed") else "before"
        if not state.get("listed"):
            state["listed"] = True
            on_stream = {"io.modelcontextprotocol/subscriptionId": state["listen"]}
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/tools/list_changed",
                    "params": {"_meta": on_stream},
                }
            )
        tool = {"name": name, "inputSchema": {"type": "object"}}
        listing = {"resultType": "complete", "tools": [tool], "ttlMs": 300_000}
        send({"jsonrpc": "2.0", "id": request_id, "result": {**listing, "cacheScope": "public"}})
    else:
        error(request_id, -32601, f"Method not found: {method}")


def listen_extra(request_id, wanted):
    """Acknowledge the resource URIs of filter ``wanted`` only; then send what that leaves out,
    then an update of the first URI."""
    on_stream = {"io.modelcontextprotocol/subscriptionId": request_id}
    uris = wanted.get("resourceSubscriptions", [])
    acknowledged = {"_meta": on_stream, "notifications": {"resourceSubscriptions": uris}}
    send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": acknowledged,
        }
    )
    for kind in ("tools", "prompts"):
        send(
            {
                "jsonrpc": "2.0",
                "method": f"notifications/{kind}/list_changed",
                "params": {"_meta": on_stream},
            }
        )
    for uri in ("other://x", uris[0]):
        send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"_meta": on_stream, "uri": uri},
            }
        )


def slow_start(message, state):
    """``slow-start``: ``server/discover`` answered, ``initialize`` refused with -32022 after it,
    the rest as ``modern`` answers it once its first refusal is spent."""
    method, request_id = message.get("method"), message.get("id")
    state["rejected"] = True
    if method == "initialize" and state.get("discovered"):
        error(request_id, -32022, "this connection serves 2026-07-28: initialize is not accepted")
        return
    state["discovered"] = state.get("discovered") or method == "server/discover"
    modern(message, state)


def main():
    state = {}
    handle = (
        legacy
        if MODE in ("legacy", "silent", "silent-old") or MODE.startswith("legacy-")
        else modern
    )
    if MODE.startswith("slow-start:"):
        with open(MODE.partition(":")[2]):  # blocks until the test opens it to write
            handle = slow_start
    for line in sys.stdin:
        message = json.loads(line)
        print("got " + json.dumps(message), file=sys.stderr, flush=True)
        handle(message, state)


if __name__ == "__main__":
    main()
