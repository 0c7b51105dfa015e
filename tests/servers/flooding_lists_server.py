"""A stdio "server" (2025-06-18) whose tools and resources change all at once: ``flood_lists``
sends ``notifications/tools/list_changed`` 200 times, ``flood_updates`` sends
``notifications/resources/updated`` of ``flood://r`` 200 times, each before its answer.  It answers
``tools/list`` and ``resources/read`` half a second late, each on a thread of its own (a listing
is still in flight when the flood comes), so a client that lists again once per notification
sends 200 requests.  Written by hand (no mcp_ref) so the page is tested against code that shares
nothing with it (tests/inspector/test_page_hostile.py)."""

import json
import sys
import threading
import time

COUNT = 200
lock = threading.Lock()


def send(message: dict) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def answer_late(request_id, result: dict) -> None:
    time.sleep(0.5)
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}} for name in ("flood_lists", "flood_updates")
]
CONTENTS = [{"uri": "flood://r", "mimeType": "text/plain", "text": "r"}]


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None or method is None:
            continue
        result: dict = {}
        if method == "initialize":
            capabilities = {"tools": {"listChanged": True}, "resources": {"subscribe": True}}
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "serverInfo": {"name": "flooding-lists", "version": "1"},
            }
        elif method in ("tools/list", "resources/read"):
            late = {"tools": TOOLS} if method == "tools/list" else {"contents": CONTENTS}
            threading.Thread(target=answer_late, args=(request_id, late), daemon=True).start()
            continue
        elif method == "resources/list":
            result = {"resources": [{"uri": "flood://r", "name": "r"}]}
        elif method == "tools/call":
            name = message["params"]["name"]
            for _ in range(COUNT):
                if name == "flood_lists":
                    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                else:
                    params = {"uri": "flood://r"}
                    send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/resources/updated",
                            "params": params,
                        }
                    )
            result = {"content": [{"type": "text", "text": f"sent {COUNT}"}]}
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
