"""A raw stdio server (handshake era) whose answer to ``tools/call`` is what the tool's name asks
for (tests/protocol/test_stdio_odd_peers.py):

* ``both``: an answer with both ``result`` and ``error``;
* ``no-jsonrpc``: an answer without ``"jsonrpc": "2.0"``;
* ``null-id``: an answer ``{"jsonrpc": "2.0", "id": null, "result": {}}``, then the real one;
* ``big``: an answer of ``arguments.size`` bytes or more, its id before its result;
* ``silent``: no answer at all;
* ``exit``: no answer; with ``arguments.seconds`` it starts a process that inherits its stdout
  and sleeps that long, and writes that process's pid to stderr as ``child <pid>``; then it exits
  with status 3;
* anything else: ``arguments.text`` as text.

It writes every line it receives to stderr as ``got <line>``, before it acts on it.  Written by
hand (no mcp_ref), so the client meets code that shares nothing with it.
"""

import json
import os
import subprocess
import sys


def send(message) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(request_id, value: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": [{"type": "text", "text": value}]},
    }


def main() -> None:
    for line in sys.stdin:
        sys.stderr.write("got " + line)
        sys.stderr.flush()
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method is None or request_id is None:
            continue  # notifications and answers need no reply
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "odd-answers", "version": "0"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
            continue
        if method != "tools/call":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
            continue
        name = message["params"]["name"]
        arguments = message["params"].get("arguments") or {}
        if name == "both":
            send({**text(request_id, "both"), "error": {"code": -32603, "message": "and an error"}})
        elif name == "no-jsonrpc":
            answer = text(request_id, "no jsonrpc")
            del answer["jsonrpc"]
            send(answer)
        elif name == "null-id":
            send({"jsonrpc": "2.0", "id": None, "result": {}})
            send(text(request_id, "after a null id"))
        elif name == "big":
            send(text(request_id, "x" * arguments["size"]))
        elif name == "exit":
            if arguments.get("seconds"):
                child = subprocess.Popen(
                    [sys.executable, "-c", f"import time; time.sleep({arguments['seconds']})"],
                    stdin=subprocess.DEVNULL,
                )
                sys.stderr.write(f"child {child.pid}\n")
                sys.stderr.flush()
            os._exit(3)
        elif name != "silent":
            send(text(request_id, arguments.get("text", "")))


if __name__ == "__main__":
    main()
