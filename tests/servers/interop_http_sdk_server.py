"""tests/servers/interop_sdk_server.py's official-SDK server, served over HTTP by uvicorn.

Used by tests/interop/test_interop_http.py::

    python interop_http_sdk_server.py --port PORT [--transport streamable|sse] [--stateless] [--json-response]

``streamable`` (the default) serves the SDK's ``streamable_http_app()`` at /mcp (with sessions,
unless ``--stateless``); ``sse`` serves its legacy HTTP+SSE ``sse_app()``: GET /sse for the
stream, POST /messages/?session_id=... for messages.  Only 127.0.0.1 is bound.
"""

from __future__ import annotations

import argparse
import warnings

import uvicorn

# This script's directory is sys.path[0]: the same tools, resources and prompt as over stdio.
from interop_sdk_server import server

warnings.simplefilter("ignore")  # deprecation notices must not clutter stderr


def build_app(transport: str, *, stateless: bool, json_response: bool):
    if transport == "sse":
        return server.sse_app()
    try:  # mcp 2.x: the options are arguments of streamable_http_app()
        return server.streamable_http_app(stateless_http=stateless, json_response=json_response)
    except TypeError:  # mcp 1.x FastMCP: they are settings
        server.settings.stateless_http = stateless
        server.settings.json_response = json_response
        return server.streamable_http_app()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--transport", choices=("streamable", "sse"), default="streamable")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--json-response", action="store_true")
    args = parser.parse_args()
    app = build_app(args.transport, stateless=args.stateless, json_response=args.json_response)
    # A short graceful shutdown: open SSE streams must not hold up SIGTERM for long.
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=1
    )


if __name__ == "__main__":
    main()
