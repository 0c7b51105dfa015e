"""A raw stdio server that plays one kind of peer a dual-era client meets (argv[1]):

* ``legacy``: a handshake-only server; a request before ``initialize`` gets -32600, and
  ``server/discover`` is an unknown method;
* ``silent``: the same, but a request before ``initialize`` gets no answer at all;
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
  (the probe) with the JSON-RPC error ``<code>``.

It writes every request it receives to stderr as ``got <json>``.  Written by hand (no mcp_ref)
so the tests see the client against code that shares nothing with it.
"""

import json
import sys

MODE = sys.argv[1]
MODERN = "2026-07-28"
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
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
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
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": {
                        "io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}
                    },
                },
            }
        )
    elif method == "tools/call":
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
    else:
        error(request_id, -32601, f"Method not found: {method}")


def main():
    state = {}
    handle = legacy if MODE in ("legacy", "silent") or MODE.startswith("legacy-") else modern
    for line in sys.stdin:
        message = json.loads(line)
        print("got " + json.dumps(message), file=sys.stderr, flush=True)
        handle(message, state)


if __name__ == "__main__":
    main()
